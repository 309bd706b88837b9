#!/usr/bin/python3
"""A robot of the team in the paper's environment-adaptation task, in Python
with PyTorch: client/examples/fmnist_worker.cc's robot, with the same flags,
output lines and CSV records, so that tools/run.sh --sdk=python (and a team
mixing Python and C++ robots) runs the main job with it.

A model first trained on clean Fashion-MNIST images (the C++ robot's cached
pretraining, or its own) is adapted by the team to degraded images, each
robot on its own shard, through rogd with rog.connect and rog.Optimizer.

Output, one line each (for tools/run.sh to parse):
  progress id=ID t=SECONDS iter=N steps=N acc=FRACTION stall=SHARE
  final id=ID t=SECONDS iter=N steps=N acc=FRACTION stall=SHARE detached=SHARE stalls=N
        up_mb=X down_mb=Y real_compute_ms=Z pre_acc=FRACTION finish_unix=T finish_s=D
(pre_acc: the replica just before the final sync; finish_unix: when finish()
was called; finish_s: how long finish() and close() took.)
With --csv_dir, also ID.iters.csv, ID.acc.csv and ID.pushes.csv.
"""

import argparse
import collections
import os
import re
import sys
import threading
import time

import torch
import torch.nn.functional as F

import fmnist_task
import rog


def duration(text):
    """An absl duration as the C++ robot takes it: 0, 50ms, 2.18s, 1m."""
    m = re.fullmatch(r"(0|[0-9]+(?:\.[0-9]+)?)(ms|s|m)?", text)
    if not m or (m.group(2) is None and m.group(1) != "0"):
        raise argparse.ArgumentTypeError(f"'{text}' is not a duration such as 2.18s or 50ms")
    return float(m.group(1)) * {"ms": 1e-3, "s": 1.0, "m": 60.0, None: 1.0}[m.group(2)]


def flags():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--server", default="127.0.0.1:7070", help="rogd's address, host:port")
    p.add_argument("--id", default="", help="this robot's worker id (required unless --pretrain_only)")
    p.add_argument("--shard", type=int, default=0, help="this robot's shard (0-based)")
    p.add_argument("--shards", type=int, default=4, help="number of shards (robots)")
    p.add_argument("--model", default="cnn", choices=["cnn", "convmlp"])
    p.add_argument("--compute_time", type=duration, default=0.0,
                   help="pad each iteration's compute to this time, e.g. 2.18s; 0 = none")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=float, default=120, help="how long to adapt")
    p.add_argument("--eval_every", type=float, default=10)
    p.add_argument("--progress_every", type=float, default=2)
    p.add_argument("--pretrain_only", action="store_true")
    p.add_argument("--csv_dir", default="")
    p.add_argument("--eval_images", type=int, default=2000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--non_iid", action="store_true")
    p.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--cache_dir", default="/tmp/rog-cache")
    p.add_argument("--pretrain_steps", type=int, default=600)
    p.add_argument("--tls_ca", default="", help="PEM CA certificate that signed rogd's: talk TLS")
    p.add_argument("--tls_cert", default="", help="this robot's PEM certificate (mutual TLS)")
    p.add_argument("--tls_key", default="", help="PEM private key of --tls_cert")
    p.add_argument("--tls_server_name", default="", help="check rogd's certificate against this name")
    p.add_argument("--token_file", default="", help="file holding the worker token")
    a = p.parse_args()
    if not a.pretrain_only and not a.id:
        p.error("--id is required (e.g. --id=robot1)")
    if not 0 <= a.shard < a.shards:
        p.error("need 0 <= --shard < --shards")
    if not 0 <= a.compute_time <= 3600:
        p.error("--compute_time must be between 0 and 1h")
    return a


class Csv:
    """The records tools/bench.sh reads, as the C++ robot writes them."""

    def __init__(self, directory, worker_id):
        self.iters = self.acc = self.pushes = None
        if not directory:
            return
        self.iters = open(os.path.join(directory, f"{worker_id}.iters.csv"), "w")
        self.acc = open(os.path.join(directory, f"{worker_id}.acc.csv"), "w")
        self.pushes = open(os.path.join(directory, f"{worker_id}.pushes.csv"), "w")
        self.iters.write("unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,rows_up,"
                         "bytes_up,payload_up,rows_down,bytes_down,payload_down,disconnected,"
                         "detached_s,kind,real_compute_s\n")
        self.acc.write("unix_s,elapsed_s,iteration,accuracy\n")
        self.pushes.write("start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,"
                          "disconnected,late_bytes,ack_s,acked_bytes\n")
        for f in (self.iters, self.acc, self.pushes):
            f.flush()

    def iteration(self, s, kind, real_compute):
        if self.iters is None:
            return
        now = time.time()
        self.iters.write(
            f"{now:.6f},{s.iteration},{s.stall_seconds:.6f},{int(s.stalled)},"
            f"{s.compute_seconds:.6f},{s.transmit_seconds:.6f},{s.window_seconds:.6f},"
            f"{s.rows_up},{s.bytes_up},{s.payload_up},{s.rows_down},{s.bytes_down},"
            f"{s.payload_down},{int(s.disconnected)},{s.detached_seconds:.6f},{kind},"
            f"{real_compute:.6f}\n")
        self.iters.flush()
        for p in s.pushes:
            self.pushes.write(
                f"{now - p.age_seconds:.6f},{p.iteration},{p.window_seconds:.6f},{p.bytes},"
                f"{p.payload},{p.busy_seconds:.6f},{p.overshoot_seconds:.6f},"
                f"{int(p.disconnected)},{p.late_bytes},{p.ack_seconds:.6f},{p.acked_bytes}\n")
        if s.pushes:
            self.pushes.flush()

    def accuracy(self, unix_s, elapsed, iteration, acc):
        if self.acc is not None:
            self.acc.write(f"{unix_s:.6f},{elapsed:.3f},{iteration},{acc:.4f}\n")
            self.acc.flush()


class Evaluator:
    """Scores snapshots of the parameters on another thread, in order, so
    that evaluating never delays an iteration (the C++ robot's Evaluator)."""

    MAX_QUEUED = 1024

    def __init__(self, convmlp, images, labels, csv):
        self.net = fmnist_task.Net(convmlp)
        self.images, self.labels, self.csv = images, labels, csv
        self.queue = collections.deque()
        self.cv = threading.Condition()
        self.stopping = False
        self.dropped = 0
        self.latest = -1.0
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def snapshot(self, net, elapsed, iteration):
        with torch.no_grad():
            params = [p.detach().clone() for p in net.parameters()]
        with self.cv:
            if len(self.queue) >= self.MAX_QUEUED:
                self.queue.popleft()
                self.dropped += 1
            self.queue.append((time.time(), elapsed, iteration, params))
            self.cv.notify()

    def loop(self):
        while True:
            with self.cv:
                self.cv.wait_for(lambda: self.stopping or self.queue)
                if not self.queue:
                    return
                unix_s, elapsed, iteration, params = self.queue.popleft()
            with torch.no_grad():
                for mine, p in zip(self.net.parameters(), params):
                    mine.copy_(p)
            acc = fmnist_task.accuracy(self.net, self.images, self.labels)
            self.latest = acc
            self.csv.accuracy(unix_s, elapsed, iteration, acc)

    def stop(self):
        with self.cv:
            self.stopping = True
            self.cv.notify()
        self.thread.join()


class Adaptation:
    """One robot's adaptation with its team: the loop, evaluations and
    progress lines on schedule, and what it adds up for the final line."""

    def __init__(self, a, net, team, shard):
        self.a, self.net, self.team = a, net, team
        self.images, self.labels = shard
        self.opt = rog.Optimizer(torch.optim.SGD(net.parameters(), lr=a.lr), team)
        self.gen = torch.Generator().manual_seed(a.seed * 131 + a.shard)
        self.t0 = time.monotonic()
        self.stall = self.real_compute_total = 0.0
        self.next_eval = self.next_progress = 0.0
        self.stalls = self.up = self.down = self.iter = self.steps = 0
        self.stall_total = self.detached_total = 0.0

    def elapsed(self):
        return time.monotonic() - self.t0

    def tick(self, evaluator):
        if self.elapsed() >= self.next_eval:
            evaluator.snapshot(self.net, self.elapsed(), self.iter)
            self.next_eval += self.a.eval_every
        if self.elapsed() >= self.next_progress:
            acc = evaluator.latest
            print(f"progress id={self.a.id} t={self.elapsed():.1f} iter={self.iter} "
                  f"steps={self.steps} acc={'-' if acc < 0 else f'{acc:.4f}'} "
                  f"stall={self.stall / max(self.elapsed(), 1e-9):.3f}", flush=True)
            self.next_progress = self.elapsed() + self.a.progress_every

    def begin(self, evaluator):
        """Waits in slices until the next step may start, so that the time
        ends on time even while rogd has this robot detached; False when the
        time ran out first. Any other wait over 120 s fails."""
        waited = 0.0
        while self.elapsed() < self.a.seconds:
            slice_ = min(5.0, max(0.0, self.next_eval - self.elapsed()),
                         self.a.seconds - self.elapsed())
            try:
                self.team.begin(timeout=max(slice_, 0.01))
                return True
            except rog.DeadlineExceeded:
                if not self.team.detached:
                    waited += slice_
                if waited >= 120:
                    raise
                self.tick(evaluator)
        return False

    def compute(self):
        """One SGD step on a batch of the shard, padded to --compute_time;
        the real compute time."""
        start = time.monotonic()
        idx = torch.randint(0, self.images.shape[0], (self.a.batch,), generator=self.gen)
        self.opt.zero_grad()
        F.nll_loss(self.net(self.images[idx]), self.labels[idx]).backward()
        real = time.monotonic() - start
        self.real_compute_total += real
        if real < self.a.compute_time:
            time.sleep(self.a.compute_time - real)
        self.opt.step(wait=False)  # the SGD step, pushed; begin() waits before the next
        return real

    def record(self, st, real, csv):
        self.iter = st.iteration
        self.steps += 1
        csv.iteration(st, 1 if st.detached else 0, real)
        self.stall_total = self.team.stall_seconds
        self.detached_total = self.team.detached_seconds
        self.stall += st.stall_seconds
        self.stalls += int(st.stalled)
        self.up += st.bytes_up
        self.down += st.bytes_down

    def run(self, evaluator, csv):
        while self.elapsed() < self.a.seconds:
            self.tick(evaluator)
            if not self.begin(evaluator):
                # The time is up while waiting: record the wait.
                tail = rog.IterationStats(
                    iteration=self.iter,
                    stall_seconds=self.team.stall_seconds - self.stall_total,
                    detached_seconds=self.team.detached_seconds - self.detached_total)
                csv.iteration(tail, 2, 0.0)
                break
            real = self.compute()
            self.record(self.team.stats(), real, csv)

    def finish(self, evaluator, csv, test):
        """The team's final sync, the last evaluations and the final line."""
        # The replica as training left it, scored after the sync (off its clock).
        with torch.no_grad():
            before = [p.detach().clone() for p in self.net.parameters()]
        finish_unix = time.time()
        try:
            self.team.finish(timeout=60)
            self.team.close(timeout=30)
        except rog.Error as e:
            print(f"fmnist_robot {self.a.id}: close: {e}", file=sys.stderr, flush=True)
            self.team.abandon()
        finish_s = time.time() - finish_unix
        end = self.elapsed()
        evaluator.stop()
        if evaluator.dropped:
            print(f"fmnist_robot {self.a.id}: evaluation fell behind; {evaluator.dropped} "
                  "snapshots were not scored (raise --eval_every or lower --eval_images)",
                  file=sys.stderr)
        acc = fmnist_task.accuracy(self.net, *test)
        csv.accuracy(time.time(), end, self.iter, acc)
        with torch.no_grad():
            for p, b in zip(self.net.parameters(), before):
                p.copy_(b)
        pre_acc = fmnist_task.accuracy(self.net, *test)
        print(f"final id={self.a.id} t={end:.1f} iter={self.iter} steps={self.steps} "
              f"acc={acc:.4f} stall={self.stall / max(end, 1e-9):.3f} "
              f"detached={self.team.detached_seconds / max(end, 1e-9):.3f} "
              f"stalls={self.stalls} up_mb={self.up / 1e6:.2f} down_mb={self.down / 1e6:.2f} "
              f"real_compute_ms={1e3 * self.real_compute_total / self.steps if self.steps else 0:.2f} "
              f"pre_acc={pre_acc:.4f} finish_unix={finish_unix:.3f} finish_s={finish_s:.3f}",
              flush=True)


def main():
    a = flags()
    torch.set_num_threads(1)
    train = fmnist_task.load(a.data_dir, "train")
    test = fmnist_task.load(a.data_dir, "t10k")
    net = fmnist_task.Net(a.model == "convmlp")
    fmnist_task.pretrained(net, a.model, a.seed, a.pretrain_steps, a.cache_dir, train, test)
    degraded = fmnist_task.degraded_test(test, a.seed, a.eval_images)
    if a.pretrain_only:
        print(f"degraded test accuracy of the clean model: "
              f"{fmnist_task.accuracy(net, *degraded):.3f}")
        return 0
    shard = fmnist_task.degraded_shard(train, a.shard, a.shards, a.seed, a.non_iid)
    security = {k: v for k, v in (("tls_ca_file", a.tls_ca), ("tls_cert_file", a.tls_cert),
                                  ("tls_key_file", a.tls_key),
                                  ("tls_server_name", a.tls_server_name),
                                  ("token_file", a.token_file)) if v}
    try:
        csv = Csv(a.csv_dir, a.id)
    except OSError as e:
        print(f"fmnist_robot: cannot write the CSV records: {e}: does --csv_dir exist?",
              file=sys.stderr)
        return 2
    try:
        team = rog.connect(a.server, net, worker_id=a.id, wait=False, **security)
    except rog.Error as e:
        print(f"fmnist_robot: {e.message}", file=sys.stderr)
        return 2
    adaptation = Adaptation(a, net, team, shard)
    evaluator = Evaluator(a.model == "convmlp", degraded[0], degraded[1], csv)
    try:
        adaptation.run(evaluator, csv)
    except rog.Error as e:
        print(f"fmnist_robot {a.id}: {e.message}", file=sys.stderr, flush=True)
        team.abandon()
        return 1
    adaptation.finish(evaluator, csv, degraded)
    team.abandon()  # closed already: frees the connection
    return 0


if __name__ == "__main__":
    sys.exit(main())
