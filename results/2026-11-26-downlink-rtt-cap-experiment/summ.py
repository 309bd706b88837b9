# One line per leg: final iterations per robot, and stretches where a robot's
# downlink estimate (rogctl workers) stayed under 0.2 MB/s while its stall on
# rogd's delivery grew (a "stop"): start-end seconds, robot, stall growth.
import json, re, sys
for d in sys.argv[1:]:
    out = open(f'{d}/rog.out').read()
    last = [l for l in out.split('\n') if re.match(r'\s*\d+s \|', l)]
    its = re.findall(r'r(\d)\s+(\d+) it', last[-1]) if last else []
    rows = []
    for line in open(f'{d}/workers.jsonl'):
        ts, j = line.split(' ', 1)
        w = json.loads(j)['workers']
        if len(w) == 4: rows.append((float(ts), {x['id']: x for x in w}))
    t0 = rows[0][0]
    stops = []
    for rid in ['robot1', 'robot2', 'robot3', 'robot4']:
        start = None
        for t, m in rows:
            x = m[rid]
            low = x['downlink_goodput_bytes_per_second'] < 0.2e6
            if low and start is None: start = (t, x['stall_downlink_seconds'])
            if (not low or t == rows[-1][0]) and start is not None:
                dur = t - start[0]; grew = x['stall_downlink_seconds'] - start[1]
                if dur >= 10 and grew >= 5:
                    stops.append(f"{rid} {start[0]-t0:.0f}-{t-t0:.0f}s (+{grew:.0f} s stalled on delivery)")
                start = None
    print(f"{d.split('/')[-1]}: iterations " + ' '.join(f"r{a}={b}" for a, b in its) + "; stops: " + ('; '.join(stops) or 'none'))
