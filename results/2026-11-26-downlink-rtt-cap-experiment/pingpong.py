# A window-limited flow through the relay, both directions in use, like rogd's
# downlink: the upstream keeps at most WINDOW bytes unacknowledged in 16 KiB
# messages; the client acknowledges every message with 16 bytes upstream.
# Prints the client's received bytes per second.
import socket, sys, time, struct, threading
mode = sys.argv[1]
MSG = 16384; WINDOW = int(sys.argv[4]) if len(sys.argv) > 4 else 65536
if mode == 'server':
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('127.0.0.1', 0)); s.listen(1)
    open(sys.argv[2], 'w').write(str(s.getsockname()[1]))
    c, _ = s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sent = 0; acked = 0; buf = b'x' * MSG
    c.setblocking(True)
    try:
        while True:
            while sent - acked < WINDOW:
                c.sendall(buf); sent += MSG
            d = c.recv(4096)
            if not d: break
            acked += (len(d) // 16) * MSG
    except Exception: pass
else:
    port = int(sys.argv[2]); seconds = float(sys.argv[3])
    c = socket.create_connection(('127.0.0.1', port)); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.time(); last = t0; n = 0; pend = 0
    while time.time() - t0 < seconds:
        d = c.recv(1 << 20)
        if not d: break
        n += len(d); pend += len(d)
        k = pend // MSG
        if k: c.sendall(b'a' * 16 * k); pend -= k * MSG
        now = time.time()
        if now - last >= 1:
            print(f"{now - t0:.0f}s {n/1e6:.2f}MB/s", flush=True); n = 0; last = now
