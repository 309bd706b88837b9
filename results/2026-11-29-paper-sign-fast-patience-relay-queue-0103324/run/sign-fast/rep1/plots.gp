# Made by //tools:bench_report; run with gnuplot in the results folder.
set terminal pngcairo size 900,540 noenhanced
set grid
set key bottom right
set ylabel 'accuracy on degraded test images (team mean)'
set output 'accuracy_time.png'
set xlabel 'wall-clock time (s)'
set title 'Accuracy against wall-clock time'
plot 'team_bsp.dat' using 1:3 with linespoints title 'bsp', 'team_ssp.dat' using 1:3 with linespoints title 'ssp', 'team_rog.dat' using 1:3 with linespoints title 'rog'
set output 'accuracy_iterations.png'
set xlabel 'iterations (team mean)'
set title 'Accuracy against iterations'
plot 'team_bsp.dat' using 2:3 with linespoints title 'bsp', 'team_ssp.dat' using 2:3 with linespoints title 'ssp', 'team_rog.dat' using 2:3 with linespoints title 'rog'
set output 'time_breakdown.png'
set title 'Where each robot''s time went'
set ylabel 'seconds per robot'
set xlabel ''
set key outside right top
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.6
plot 'breakdown.dat' using 2:xtic(1) title 'compute', '' using 3 title 'transmit', '' using 4 title 'stall', '' using 5 title 'other'
