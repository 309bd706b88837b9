"""The model's parameters as rog's flat float32 rows, with torch's own
operations: no native code here, so this runs (and its tests run) with any
torch, on any device, with or without rog's native module.

Two float32 host buffers of the whole model, allocated once (pinned when the
parameters are on CUDA):

- ``begin``: what the step starts from. The native module writes the
  team's model into it (BeginIteration); :meth:`Staging.load` copies it into
  the parameters, each converted to its own dtype (round to nearest), and
  then holds the parameters as loaded: for a float16 or bfloat16 parameter
  the rounded value, so that rounding is never pushed as an update.
- ``delta``: what the step changed. :meth:`Staging.take_delta` fills it
  with the parameters now minus ``begin``, computed in float64 for a float64
  parameter (a small update to a large weight survives) and in float32
  otherwise, and the native module pushes it (EndIteration).

Copies per step: on CUDA, one host-to-device copy of ``begin`` (non
blocking, from pinned memory) and one device-to-host copy of ``delta``
(which waits for the step's kernels: the push needs its values); the rest
runs on the device. On the CPU with float32 parameters the buffers are the
parameters' own flat copies and no other copy is made; other dtypes add
per-parameter conversions on the CPU.
"""

import torch

__all__ = ["Staging", "SUPPORTED_DTYPES"]

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)

_ROUNDED = (torch.float16, torch.bfloat16)


def _describe(dtype):
    return str(dtype).replace("torch.", "")


class Staging:
    """The parameters ``named`` (a list of (name, tensor), in row order) as
    rog's flat float32 model."""

    def __init__(self, named):
        named = list(named)
        if not named:
            raise ValueError("the model has no parameters to synchronise")
        first_name, first = named[0]
        for name, p in named:
            if p.dtype not in SUPPORTED_DTYPES:
                raise TypeError(
                    f"parameter '{name}' is {_describe(p.dtype)}; rog synchronises float32, "
                    "float16, bfloat16 and float64 parameters (convert the model, e.g. "
                    "model.float())")
            if p.device != first.device:
                raise ValueError(
                    f"parameter '{name}' is on {p.device} but '{first_name}' on "
                    f"{first.device}; rog synchronises a model whose parameters are all on one "
                    "device (move the model with model.to(device) before connecting)")
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self.shapes = [list(p.shape) for p in self.params]
        self.device = first.device
        self.slices = []
        at = 0
        for p in self.params:
            self.slices.append(slice(at, at + p.numel()))
            at += p.numel()
        self.numel = at
        self.cuda = self.device.type == "cuda"
        pin = self.cuda and torch.cuda.is_available()
        self.begin_host = torch.empty(self.numel, dtype=torch.float32, pin_memory=pin)
        self.delta_host = torch.empty(self.numel, dtype=torch.float32, pin_memory=pin)
        if self.cuda:
            self.begin_dev = torch.empty(self.numel, dtype=torch.float32, device=self.device)
            self.delta_dev = torch.empty(self.numel, dtype=torch.float32, device=self.device)
        else:
            self.begin_dev, self.delta_dev = self.begin_host, self.delta_host
        # What the native module reads and writes in place (no copy).
        self.begin_buffer = self.begin_host.numpy()
        self.delta_buffer = self.delta_host.numpy()
        self._loaded = None  # CUDA: the event after the last host-to-device copy
        # Views made once, so that a step dispatches one torch operation per
        # parameter and direction (plus the read-back of 16-bit ones): each
        # parameter's slice of the buffers, flat and in its shape, and the
        # parameter itself flat when it is contiguous (the optimizer writes
        # it in place; a parameter replaced after connect() is not seen).
        self._begin_flat = [self.begin_dev[s] for s in self.slices]
        self._delta_flat = [self.delta_dev[s] for s in self.slices]
        self._begin_shaped = [b.view(p.shape) for b, p in zip(self._begin_flat, self.params)]
        self._param_flat = [p.detach().view(-1) if p.is_contiguous() else None
                            for p in self.params]

    def initial(self):
        """The parameters now, as a fresh float32 host array (the model the
        first robot uploads)."""
        with torch.no_grad():
            flat = torch.cat([p.detach().reshape(-1).to("cpu", torch.float32)
                              for p in self.params])
        return flat.numpy()

    def host_ready(self):
        """Waits until ``begin`` may be written again: the last load's
        host-to-device copy has finished (CUDA only; at once otherwise)."""
        if self._loaded is not None:
            self._loaded.synchronize()
            self._loaded = None

    def load(self):
        """Copies ``begin`` into the parameters; ``begin`` then holds them as
        loaded."""
        with torch.no_grad():
            if self.cuda:
                self.begin_dev.copy_(self.begin_host, non_blocking=True)
                self._loaded = torch.cuda.Event()
                self._loaded.record()
            for p, flat, shaped in zip(self.params, self._begin_flat, self._begin_shaped):
                p.copy_(shaped)
                if p.dtype in _ROUNDED:
                    flat.copy_(p.reshape(-1))

    def take_delta(self):
        """Fills ``delta`` with the parameters now minus ``begin``."""
        with torch.no_grad():
            for p, now, begin, out in zip(self.params, self._param_flat, self._begin_flat,
                                          self._delta_flat):
                if now is None:  # not contiguous: a flat copy
                    now = p.detach().reshape(-1)
                if p.dtype == torch.float64:
                    out.copy_(now - begin.to(torch.float64))
                else:
                    torch.sub(now, begin, out=out)
            if self.cuda:
                self.delta_host.copy_(self.delta_dev)
