"""rog._staging without the native module and without rogd: torch's side of
the SDK, on every device this torch has (the CPU here; CUDA too wherever
these tests run with a CUDA torch: they import only torch and rog/_staging.py).

    python3 -m pytest python/tests/test_staging.py    # from the repository root
"""

import importlib.util
import os

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def _load_staging():
    """rog/_staging.py alone: these tests must not need the native module."""
    path = os.path.join(HERE, "..", "rog", "_staging.py")
    spec = importlib.util.spec_from_file_location("rog_staging_alone", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


staging = _load_staging()

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def params(dtype, device, noncontiguous=False):
    w = torch.zeros(6, 4, dtype=dtype, device=device)
    if noncontiguous:
        w = torch.zeros(4, 6, dtype=dtype, device=device).t()
    return [("w", torch.nn.Parameter(w)),
            ("b", torch.nn.Parameter(torch.zeros(3, dtype=dtype, device=device)))]


def set_begin(s, values):
    """What the native module's BeginIteration does: the replica into begin."""
    s.host_ready()
    s.begin_buffer[:] = torch.as_tensor(values, dtype=torch.float32).numpy()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("noncontiguous", [False, True])
def test_load_then_delta_round_trips_integer_updates(device, dtype, noncontiguous):
    named = params(dtype, device, noncontiguous)
    s = staging.Staging(named)
    assert s.names == ["w", "b"] and s.shapes == [[6, 4], [3]] and s.numel == 27
    values = torch.arange(27, dtype=torch.float32) - 13
    set_begin(s, values)
    s.load()
    w, b = named[0][1], named[1][1]
    assert w.dtype == dtype and w.is_contiguous() == (not noncontiguous)
    assert torch.equal(torch.cat([w.detach().reshape(-1), b.detach()]).cpu().float(), values)
    with torch.no_grad():
        w.add_(2)
        b.sub_(1)
    s.take_delta()
    delta = torch.from_numpy(s.delta_buffer)
    assert torch.equal(delta, torch.tensor([2.0] * 24 + [-1.0] * 3))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rounding_at_load_is_never_pushed(device, dtype):
    # The team's model holds values a 16-bit parameter cannot: a step that
    # changes nothing pushes exactly nothing.
    named = params(dtype, device)
    s = staging.Staging(named)
    values = 1 + torch.arange(27, dtype=torch.float32) * 1e-4
    set_begin(s, values)
    s.load()
    assert not torch.equal(named[0][1].detach().cpu().float().reshape(-1), values[:24])
    s.take_delta()
    assert torch.count_nonzero(torch.from_numpy(s.delta_buffer)) == 0


@pytest.mark.parametrize("device", DEVICES)
def test_a_float64_parameters_small_update_is_kept(device):
    named = params(torch.float64, device)
    s = staging.Staging(named)
    set_begin(s, torch.ones(27))
    s.load()
    with torch.no_grad():
        named[0][1].add_(2.0 ** -30)  # lost if narrowed to fp32 before subtracting
    s.take_delta()
    delta = torch.from_numpy(s.delta_buffer)
    assert torch.equal(delta[:24], torch.full((24,), 2.0 ** -30))
    assert torch.count_nonzero(delta[24:]) == 0


@pytest.mark.parametrize("device", DEVICES)
def test_initial_values_are_the_parameters_as_float32(device):
    named = params(torch.bfloat16, device)
    with torch.no_grad():
        named[0][1].fill_(0.5)
        named[1][1].fill_(-2)
    s = staging.Staging(named)
    init = s.initial()
    assert init.dtype.name == "float32" and init.shape == (27,)
    assert list(init[:24]) == [0.5] * 24 and list(init[24:]) == [-2.0] * 3


class TwoLayer(torch.nn.Module):
    """A small model whose forward pass runs in every dtype on every device
    (elementwise products and sums: CPU torch 1.13 has no float16 matmul),
    with one non-contiguous parameter."""

    def __init__(self, dtype, device):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w1 = torch.nn.Parameter(
            (torch.randn(16, 12, generator=g) / 4).to(device, dtype).t())  # non-contiguous
        self.b1 = torch.nn.Parameter(torch.zeros(12, dtype=dtype, device=device))
        self.w2 = torch.nn.Parameter((torch.randn(5, 12, generator=g) / 4).to(device, dtype))

    def forward(self, x):
        h = (x.unsqueeze(1) * self.w1).sum(-1) + self.b1
        h = h * h  # CPU torch 1.13 has no float16 relu either
        return (h.unsqueeze(1) * self.w2).sum(-1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_training_steps_push_exactly_what_the_optimizer_changed(device, dtype):
    # What a robot's loop does: the team's model into the parameters, a real
    # optimizer step (momentum: its state outlives the load), the change
    # taken. Every step the parameters start as the team's model rounded to
    # their dtype, and the delta is their change, bit for bit, as computed
    # here apart on the CPU. The team's model moves between steps (the
    # others' updates), so each load differs from the last.
    model = TwoLayer(dtype, device)
    s = staging.Staging(list(model.named_parameters()))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(32, 16, generator=g).to(device, dtype)
    y = torch.randint(0, 5, (32,), generator=g).to(device)
    team = torch.from_numpy(s.initial().copy())
    for step in range(6):
        set_begin(s, team)
        s.load()
        loaded = [p.detach().cpu().clone() for p in model.parameters()]
        for p, piece in zip(loaded, s.slices):
            assert torch.equal(p.reshape(-1), team[piece].to(dtype)), f"step {step}"
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x).float(), y).backward()
        opt.step()
        s.take_delta()
        delta = torch.from_numpy(s.delta_buffer).clone()
        wide = torch.float64 if dtype == torch.float64 else torch.float32
        expected = torch.cat([(p.detach().cpu().to(wide) - q.to(wide)).reshape(-1).float()
                              for p, q in zip(model.parameters(), loaded)])
        assert torch.equal(delta, expected), f"step {step}"
        assert torch.count_nonzero(delta) > 0
        team = team + delta + 1e-3 * torch.randn(team.shape, generator=g)


def test_buffers_are_allocated_once_and_shared_without_copy():
    s = staging.Staging(params(torch.float32, "cpu"))
    before = (s.begin_host.data_ptr(), s.delta_host.data_ptr())
    for _ in range(3):
        set_begin(s, torch.zeros(27))
        s.load()
        s.take_delta()
    assert (s.begin_host.data_ptr(), s.delta_host.data_ptr()) == before
    # The native module reads and writes these very bytes.
    assert s.begin_buffer.ctypes.data == s.begin_host.data_ptr()
    assert s.delta_buffer.ctypes.data == s.delta_host.data_ptr()


def test_unsupported_models_are_refused_saying_why():
    with pytest.raises(TypeError, match="parameter 'i' is int64; rog synchronises float32"):
        staging.Staging([("i", torch.zeros(3, dtype=torch.int64))])
    with pytest.raises(ValueError, match="no parameters"):
        staging.Staging([])
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match="all on one device"):
            staging.Staging([("a", torch.zeros(2)), ("b", torch.zeros(2, device="cuda"))])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_host_buffers_are_pinned():
    s = staging.Staging(params(torch.float16, "cuda"))
    assert s.begin_host.is_pinned() and s.delta_host.is_pinned()
    assert s.begin_dev.device.type == "cuda"
