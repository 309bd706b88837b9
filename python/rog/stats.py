"""What the SDK reports of its iterations, as client/worker_stats.h does in
C++ (the same fields, the same meaning)."""

import dataclasses
from typing import List

__all__ = ["PushStats", "IterationStats", "StallInfo"]


@dataclasses.dataclass
class PushStats:
    """One step's push, known once rogd acknowledged its last batch (usually
    after the step returned)."""
    iteration: int = 0          # the clock after the iteration that pushed it
    age_seconds: float = 0.0    # from its step's end to the step reporting it
    window_seconds: float = 0.0  # its uplink window; 0 = none
    bytes: int = 0              # its batches' bytes
    payload: int = 0            # of which encoded row values
    busy_seconds: float = 0.0   # how long the uplink carried it
    overshoot_seconds: float = 0.0  # past the window's end; 0 within it
    late_bytes: int = 0         # formed after the window closed (mandatory rows)
    disconnected: bool = False  # the stream broke before every batch was acknowledged
    ack_seconds: float = 0.0    # from its start to its last acknowledgement
    acked_bytes: int = 0        # bytes of its batches rogd acknowledged


@dataclasses.dataclass
class IterationStats:
    """What one step cost and moved (rog::IterationStats)."""
    iteration: int = 0          # the clock after this step
    stall_seconds: float = 0.0  # the wait before the step (the staleness bound, a reconnect)
    stalled: bool = False       # whether it had to wait
    compute_seconds: float = 0.0  # from the step's start to its end
    transmit_seconds: float = 0.0  # inside the end of the step
    window_seconds: float = 0.0  # the uplink window used; 0 = none
    rows_up: int = 0
    bytes_up: int = 0
    rows_down: int = 0
    bytes_down: int = 0
    payload_up: int = 0         # of bytes_up, the encoded row values
    payload_down: int = 0
    uplink_goodput: float = 0.0  # bytes/s, from rogd's acknowledgements
    rows_kept: int = 0          # rows left with unpushed updates (cut by the window)
    disconnected: bool = False  # the stream broke during the transmission
    detached_seconds: float = 0.0  # the wait while rogd had this robot detached
    detached: bool = False      # a local step taken while detached
    pushes: List[PushStats] = dataclasses.field(default_factory=list)

    @classmethod
    def _from_native(cls, d):
        d = dict(d)
        d["pushes"] = [PushStats(**p) for p in d["pushes"]]
        return cls(**d)


@dataclasses.dataclass
class StallInfo:
    """Why the last wait waited (rogd's Stall directive, or the connection)."""
    iteration: int = 0
    rows: List[int] = dataclasses.field(default_factory=list)  # a sample of the rows missing
    missing_rows: int = 0
    waiting_for: List[str] = dataclasses.field(default_factory=list)  # worker ids, or what
    reason: str = ""            # one line for logs
