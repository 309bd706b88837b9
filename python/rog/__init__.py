"""ROG for PyTorch robots: train one model on a team of robots over unstable
WiFi, through rogd (docs/python.md).

    import rog
    with rog.connect("ps-robot:7070", model, worker_id="robot1") as team:
        opt = rog.Optimizer(torch.optim.SGD(model.parameters(), lr=0.02), team)
        for x, y in loader:
            opt.zero_grad(); loss_fn(model(x), y).backward()
            opt.step()
        team.finish()

The protocol is the C++ SDK's (rog::Worker), run by the native module
rog._native; this package does the torch work. Importing rog starts no
thread and opens no connection: connect() does.
"""

from rog.errors import *  # noqa: F401,F403  (rog.Error and one class per status code)
from rog.errors import __all__ as _errors
from rog.optim import Optimizer
from rog.stats import IterationStats, PushStats, StallInfo
from rog.team import Team, connect, default_options

try:
    from rog._native import __version__, set_log_level
except ImportError:  # the Python files without their native module
    __version__ = "unknown (rog's native module is missing)"

    def set_log_level(level):
        raise ImportError("rog's native module is missing")

__all__ = ["connect", "Team", "Optimizer", "IterationStats", "PushStats", "StallInfo",
           "default_options", "set_log_level", "__version__"] + list(_errors)
