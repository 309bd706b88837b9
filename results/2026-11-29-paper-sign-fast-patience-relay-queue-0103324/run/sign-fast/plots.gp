# Made by //tools:bench_report --repeats; run with gnuplot in the results folder.
set terminal pngcairo size 900,540 noenhanced
set grid
set key bottom right
set ylabel 'accuracy on degraded test images (team mean)'
set xlabel 'wall-clock time (s)'
set output 'accuracy_time.png'
set title 'Accuracy against wall-clock time, every repeat'
plot 'team_bsp_rep1.dat' using 1:2 with linespoints linecolor 1 title 'bsp repeat 1', 'team_ssp_rep1.dat' using 1:2 with linespoints linecolor 2 title 'ssp repeat 1', 'team_rog_rep1.dat' using 1:2 with linespoints linecolor 3 title 'rog repeat 1', 'team_bsp_rep2.dat' using 1:2 with linespoints linecolor 1 title 'bsp repeat 2', 'team_ssp_rep2.dat' using 1:2 with linespoints linecolor 2 title 'ssp repeat 2', 'team_rog_rep2.dat' using 1:2 with linespoints linecolor 3 title 'rog repeat 2', 'team_bsp_rep3.dat' using 1:2 with linespoints linecolor 1 title 'bsp repeat 3', 'team_ssp_rep3.dat' using 1:2 with linespoints linecolor 2 title 'ssp repeat 3', 'team_rog_rep3.dat' using 1:2 with linespoints linecolor 3 title 'rog repeat 3'
