"""A robot's membership of its team: rog::Worker (the C++ SDK, through the
native module) driving a torch model's parameters."""

import math
import os

from rog import errors
from rog._staging import Staging
from rog.stats import IterationStats, StallInfo

try:
    from rog import _native
except ImportError as e:  # rog's Python files without their native module
    _native = None
    _native_error = e

__all__ = ["connect", "Team", "default_options"]


def _require_native():
    if _native is None:
        raise ImportError(
            "rog's native module (rog/_native.so) is missing: install rog with "
            "deploy/install.sh, or build it with `bazel build //python:rog/_native.so` "
            f"({_native_error})")
    return _native


def default_options():
    """Every option of rog::WorkerOptions (client/worker.h) that connect()
    takes by keyword, with its default."""
    return dict(_require_native().default_options())


def _timeout(t, forever=0.0):
    """Seconds for the C++ SDK: None is no limit (`forever`: what that call
    takes for it)."""
    if t is None or (isinstance(t, float) and math.isinf(t) and t > 0):
        return forever
    t = float(t)
    if not t > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, not {t}")
    return t


_NO_LIMIT = 1e9  # Flush, Sync and Close take a duration: a long one


class Team:
    """This robot's connection to its team (made by :func:`connect`).

    Between steps the team has *begun* the next step: the parameters hold the
    team's model and the staleness bound lets this robot compute. A step is
    ``begin()`` (wait, then load the team's model into the parameters), the
    robot's own compute (forward, backward, the optimizer's step), and
    ``end()`` (push what the step changed); :class:`rog.Optimizer` does the
    end and the next begin in its ``step()``.

    Use it as a context manager: leaving the block normally closes the
    membership (flush, goodbye: rogd drops this robot and nobody waits for
    it); leaving it with an exception (Ctrl+C among them) abandons it as a
    crash would: rogd keeps this robot's state for its --lease and a robot
    that connects again under the same worker id rejoins it.

    Call it from one thread (the training loop's). Do not replace or move
    the model's parameters after connecting.
    """

    def __init__(self, model, worker_id, options, wait, timeout):
        native = _require_native()
        named = list(model.named_parameters())
        self._staging = Staging(named)
        self._model = model
        self.worker_id = worker_id
        self.server = options.get("server", default_options()["server"])
        self._worker = native.Worker(
            options, self._staging.names, self._staging.shapes, 1024, self._staging.initial())
        self._pid = os.getpid()
        self._closed = False  # said goodbye, or abandoned
        self._gone = False    # the native worker is destroyed
        self._begun = False
        self._stats = None
        self._stats_raw = None
        if wait:
            try:
                self.begin(timeout)
            except BaseException:
                self.abandon()
                raise

    # --- the step --------------------------------------------------------------------

    @property
    def begun(self):
        """Whether the next step has begun (begin() returned, end() not yet)."""
        return self._begun

    def begin(self, timeout=None):
        """Waits until this robot may start its next step (connected, the
        model received, the team formed, the staleness bound met), then loads
        the team's model into the parameters. At once if the step has begun
        already. `timeout`: seconds, None for no limit; past it raises
        rog.DeadlineExceeded saying what it waits for (the step has then not
        begun). Ctrl+C raises KeyboardInterrupt within 0.1 s."""
        if self._begun:
            return
        self._staging.host_ready()
        self._worker.begin_iteration(self._staging.begin_buffer, _timeout(timeout))
        self._staging.load()
        self._begun = True

    def end(self):
        """Ends the step: pushes what it changed in the parameters, the rows
        that matter most first (under ROG, returns once the rows the bound
        needs are on their way; the rest streams on while the next step
        computes). Returns its :class:`rog.IterationStats`."""
        self._end_quietly()
        return self.stats()

    def _end_quietly(self):
        """end() without making the stats (rog.Optimizer.step returns none;
        stats() makes them if asked)."""
        if not self._begun:
            raise errors.FailedPrecondition(
                "the team has not begun a step: call team.begin() before computing one (after "
                "a step whose wait timed out, or opt.step(wait=False))")
        self._staging.take_delta()
        self._begun = False
        self._stats_raw = self._worker.end_iteration(self._staging.delta_buffer)
        self._stats = None

    def stats(self):
        """The last step's :class:`rog.IterationStats` (None before the first)."""
        if self._stats is None and self._stats_raw is not None:
            self._stats = IterationStats._from_native(self._stats_raw)
        return self._stats

    # --- the team's model --------------------------------------------------------------

    def flush(self, timeout=60.0):
        """Pushes every row this robot has not pushed, whatever the window, and
        waits until rogd acknowledged them."""
        self._worker.flush(_timeout(timeout, _NO_LIMIT))

    def sync(self, timeout=60.0):
        """Flushes, then waits for every row the others pushed, and loads the
        team's model into the parameters: once every robot has synced, each
        holds rogd's model. Call it between steps (e.g. after the loop, or to
        evaluate the team's model)."""
        self._worker.sync(_timeout(timeout, _NO_LIMIT))
        self._load_replica()

    def finish(self, timeout=60.0):
        """The end of training: applies the drain rule (option ``drain``,
        default ``"average"``: under ROG the final flush pushes 1/N of what
        this robot still holds, N the team's size, and takes the rest out of
        its model), then syncs as :meth:`sync` does. Call it once, after the
        last step; once every robot has finished, each holds rogd's model."""
        self._worker.finish(_timeout(timeout, _NO_LIMIT))
        self._load_replica()

    def _load_replica(self):
        self._staging.host_ready()
        self._worker.replica(self._staging.begin_buffer)
        self._staging.load()

    def close(self, timeout=10.0):
        """Flushes and says goodbye: rogd drops this robot at once and nobody
        waits for it. No step can follow (its figures, e.g. ``clock``, can
        still be read); closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        self._begun = False
        self._worker.close(_timeout(timeout, _NO_LIMIT))

    def abandon(self):
        """Stops now, without a goodbye, as a crash would: rogd keeps this
        robot's state for its --lease; connecting again under the same worker
        id rejoins it. After close() it only frees the connection."""
        self._abandon()

    def _abandon(self):
        if self._gone or os.getpid() != self._pid:
            return
        self._gone = self._closed = True
        self._begun = False
        self._worker.abandon()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.close()
        finally:
            self.abandon()
        return False

    # --- what the SDK knows ----------------------------------------------------------

    @property
    def clock(self):
        """Iterations completed (rogd moves it when the robot rejoins)."""
        return self._worker.clock

    @property
    def connected(self):
        return self._worker.connected

    @property
    def reconnects(self):
        return self._worker.reconnects

    @property
    def detached(self):
        """Whether rogd has detached this robot now (team patience)."""
        return self._worker.detached

    @property
    def detaches(self):
        return self._worker.detaches

    @property
    def stall_seconds(self):
        """Seconds the waits before steps took in all (at the bound, or for a
        connection)."""
        return self._worker.stall_seconds

    @property
    def detached_seconds(self):
        return self._worker.detached_seconds

    @property
    def replayed(self):
        return self._worker.replayed

    @property
    def replay_dropped(self):
        return self._worker.replay_dropped

    def last_stall(self):
        """Why the last wait waited, as a :class:`rog.StallInfo`."""
        return StallInfo(**self._worker.last_stall())

    def disconnect(self, hold_seconds=0.0):
        """Breaks the stream as a network failure would (for drills)."""
        self._worker.disconnect(hold_seconds)


def connect(server, model, worker_id, *, wait=True, timeout=None, **options):
    """Joins the team that rogd at `server` ("host:port") trains, as robot
    `worker_id` (1-64 letters, digits, '.', '_' or '-', stable across
    restarts, e.g. the robot's host name), with `model`'s parameters
    (``model.named_parameters()``, in that order: every robot builds the
    same model).

    The first robot of a fresh rogd uploads its parameters as the model;
    the others receive rogd's. With `wait` (the default), connect() returns
    once the first step may begin, with the team's model in `model`
    (`timeout` seconds at most, None for no limit); otherwise it returns at
    once and ``team.begin()`` waits.

    `options`: any field of rog::WorkerOptions by its C++ name, e.g.
    ``batch_bytes=8192``, ``tls_ca_file="ca.pem"``, ``token_file=...``
    (:func:`rog.default_options` lists them with their defaults).

    Returns a :class:`Team`; use it in a ``with`` block.
    """
    native = _require_native()
    known = native.default_options()
    for k in ("server", "worker_id"):
        if k in options:
            raise TypeError(f"connect() takes {k} as its argument, not as an option")
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(f"connect() got unknown options {unknown}; rog.default_options() lists "
                        "every option")
    options = dict(options, server=server, worker_id=worker_id)
    return Team(model, worker_id, options, wait, timeout)
