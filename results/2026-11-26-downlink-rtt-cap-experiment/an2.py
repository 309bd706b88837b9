import json, sys
d=sys.argv[1]; step=float(sys.argv[2]) if len(sys.argv)>2 else 3
t0=None; last=-10
for line in open(f'{d}/workers.jsonl'):
    ts,j=line.split(' ',1); t=float(ts)
    w=json.loads(j)['workers']
    if len(w)<4: continue
    if t0 is None: t0=t
    if t-t0-last<step: continue
    last=t-t0
    s=' | '.join(f"{x['id'][-1]} it{x['iteration']:>3} up{x['uplink_goodput_bytes_per_second']/1e6:5.2f} dn{x['downlink_goodput_bytes_per_second']/1e6:5.2f} rtt{x.get('downlink_rtt_seconds',0)*1000:4.0f} inf{x.get('downlink_in_flight_bytes',0)/1e3:4.0f}k dl{x['stall_downlink_seconds']:4.0f}" for x in w)
    print(f"{t-t0:6.1f} {s}")
