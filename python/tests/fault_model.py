"""test/fault/fault_model.h in Python: the model fault tests train and its
exact conservation check, so that Python robots and the C++ fault_worker
train one model side by side.

Every row has 128 elements. Robot (process) number m adds 1 to element m of
every row per iteration; elements 96..127 carry Noise(m, k, row, e), a small
integer. Sums stay exact in every dtype rog takes for these runs' lengths
(float16 to 2048, bfloat16 to 256)."""

import torch

MARKERS = 96
WIDTH = 128
ROWS = 65  # "w" [64, 128] (64 rows) and "b" [128] (one row)
PRIMES = torch.tensor([5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73,
                       79, 83, 89, 97, 101, 103, 107, 109, 113, 127, 131, 137, 139],
                      dtype=torch.int64)


class FaultModel(torch.nn.Module):
    """FaultLayout(): "w" [64, 128] and "b" [128], zeros. `noncontiguous`: w
    is a transposed view (the same layout, other strides)."""

    def __init__(self, dtype=torch.float32, noncontiguous=False):
        super().__init__()
        if noncontiguous:
            self.w = torch.nn.Parameter(torch.zeros(WIDTH, 64, dtype=dtype).t())
            assert not self.w.is_contiguous()
        else:
            self.w = torch.nn.Parameter(torch.zeros(64, WIDTH, dtype=dtype))
        self.b = torch.nn.Parameter(torch.zeros(WIDTH, dtype=dtype))


def noise(marker, k, rows=None):
    """Noise(marker, k, row, e) for every row and e = 96..127: [rows, 32]."""
    row = torch.arange(ROWS, dtype=torch.int64).unsqueeze(1) if rows is None else rows
    return (k + 3 * marker + 5 * row) % PRIMES - (PRIMES - 1) // 2


def update(marker, k, with_noise=True):
    """Robot `marker`'s update of its iteration k (k = 1, 2, ...): [65, 128].
    Without noise, only the marker element (values small enough for
    float16 and bfloat16 to hold exactly: the noise's sums reach thousands)."""
    u = torch.zeros(ROWS, WIDTH, dtype=torch.float64)
    u[:, marker] = 1
    if with_noise:
        u[:, MARKERS:] = noise(marker, k).to(torch.float64)
    return u


class FaultStep(torch.optim.Optimizer):
    """An optimizer whose k-th step adds update(marker, k) to the model."""

    def __init__(self, model, marker, with_noise=True):
        super().__init__(model.parameters(), {})
        self.model = model
        self.marker = marker
        self.with_noise = with_noise
        self.k = 0

    @torch.no_grad()
    def step(self, closure=None):
        self.k += 1
        u = update(self.marker, self.k, self.with_noise)
        self.model.w.add_(u[:64].to(self.model.w.dtype))
        self.model.b.add_(u[64].to(self.model.b.dtype))


def expected(counts, with_noise=True):
    """What rogd must hold after robots {marker: iterations} all finished:
    [65, 128] float64. Iterations may be one count for every row, or a
    tensor of 65 (per row: a robot killed before everything it pushed was
    applied holds its first j iterations of each row, j per row)."""
    g = torch.zeros(ROWS, WIDTH, dtype=torch.float64)
    for marker, n in counts.items():
        per_row = torch.as_tensor(n, dtype=torch.int64).expand(ROWS)
        g[:, marker] += per_row.to(torch.float64)
        for k in range(1, int(per_row.max()) + 1 if with_noise else 1):
            mask = (per_row >= k).to(torch.float64).unsqueeze(1)
            g[:, MARKERS:] += mask * noise(marker, k).to(torch.float64)
    return g


def as_rows(model):
    """{"w": [64, 128], "b": [128]} as one [65, 128] float64 tensor."""
    return torch.cat([model["w"].to(torch.float64), model["b"].to(torch.float64).unsqueeze(0)])
