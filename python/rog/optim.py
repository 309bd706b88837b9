"""rog.Optimizer: any torch optimizer, its steps synchronised with the team."""

import torch

from rog import errors

__all__ = ["Optimizer"]


class Optimizer(torch.optim.Optimizer):
    """Wraps a torch optimizer (its parameters belong to the model given to
    :func:`rog.connect`) so that each ``step()`` is a step of the team::

        with rog.connect("ps-robot:7070", model, worker_id="robot1") as team:
            opt = rog.Optimizer(torch.optim.SGD(model.parameters(), lr=0.02), team)
            for x, y in loader:
                opt.zero_grad(); loss_fn(model(x), y).backward()
                opt.step()
            team.finish()

    ``step()`` runs the wrapped optimizer's step, pushes what it changed
    (``team.end()``), then waits until the next step may start and loads
    the team's model into the parameters (``team.begin()``). The wrapped
    optimizer's state, parameter groups and learning rate stay its own (LR
    schedulers work on either object).
    """

    def __init__(self, optimizer, team):  # pylint: disable=super-init-not-called
        # The wrapped optimizer keeps its state; this object only shares it.
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"rog.Optimizer wraps a torch.optim.Optimizer, not {type(optimizer)}")
        self.optimizer = optimizer
        self.team = team

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @param_groups.setter
    def param_groups(self, groups):
        self.optimizer.param_groups = groups

    @property
    def state(self):
        return self.optimizer.state

    @property
    def defaults(self):
        return self.optimizer.defaults

    def step(self, closure=None, *, wait=True, timeout=None):
        """The wrapped optimizer's step, pushed to the team. With `wait` (the
        default) it then waits until the next step may start (`timeout`
        seconds at most, None for no limit: rog.DeadlineExceeded past it,
        the step itself taken and pushed) and loads the team's model into
        the parameters. With ``wait=False`` it returns after the push and
        ``team.begin()`` waits before the next step's compute. Returns what
        the wrapped step returned."""
        if not self.team.begun:
            raise errors.FailedPrecondition(
                "the team has not begun this step: call team.begin() before computing it (the "
                "last wait timed out, or was interrupted, or step() ran with wait=False)")
        loss = self.optimizer.step() if closure is None else self.optimizer.step(closure)
        self.team._end_quietly()  # pylint: disable=protected-access
        if wait:
            self.team.begin(timeout)
        return loss

    def zero_grad(self, set_to_none=False):
        return self.optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self):
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict):
        return self.optimizer.load_state_dict(state_dict)

    def add_param_group(self, param_group):
        return self.optimizer.add_param_group(param_group)

    def __repr__(self):
        return f"rog.Optimizer({self.optimizer!r})"
