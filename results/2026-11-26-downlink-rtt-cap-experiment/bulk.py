# Upstream sends bulk data to whoever connects; the client reads and logs bytes per 0.25 s.
import socket, sys, threading, time
mode = sys.argv[1]
if mode == 'server':
    port_file = sys.argv[2]
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('127.0.0.1', 0)); s.listen(1)
    open(port_file, 'w').write(str(s.getsockname()[1]))
    c, _ = s.accept()
    buf = b'x' * 65536
    try:
        while True: c.sendall(buf)
    except Exception: pass
else:
    port = int(sys.argv[2]); seconds = float(sys.argv[3])
    c = socket.create_connection(('127.0.0.1', port))
    t0 = time.time(); last = t0; n = 0
    while time.time() - t0 < seconds:
        d = c.recv(1 << 20)
        if not d: break
        n += len(d)
        now = time.time()
        if now - last >= 0.25:
            print(f"{now:.3f} {n}", flush=True); n = 0; last = now
