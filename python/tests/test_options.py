"""connect()'s options are rog::WorkerOptions' fields, by the same names
and with the same defaults; errors are rog.Error subclasses."""

import os
import re

import pytest
import torch

import rog
from conftest import SOURCE_ROOT

# C++ objects, not options a Python caller can give (the tls_* files and the
# token make the credentials).
NOT_FROM_PYTHON = {"credentials", "clock"}


def worker_options_fields():
    """The fields of struct WorkerOptions in client/worker.h."""
    with open(os.path.join(SOURCE_ROOT, "client", "worker.h")) as f:
        text = f.read()
    body = text[text.index("struct WorkerOptions {"):]
    body = body[:body.index("\n};")]
    return {m.group(1) for m in re.finditer(r"^\s+[\w:<>, ]+?\s+(\w+)(?: = [^;]+)?;", body, re.M)}


def test_every_option_of_the_cpp_sdk_is_a_keyword():
    fields = worker_options_fields()
    assert "batch_bytes" in fields and "share_in_background" in fields
    assert set(rog.default_options()) == fields - NOT_FROM_PYTHON


def test_defaults_are_the_cpp_sdks():
    d = rog.default_options()
    assert d["server"] == "127.0.0.1:7070"
    assert d["batch_bytes"] == 16 * 1024
    assert d["batch_seconds"] == pytest.approx(0.005)
    assert d["keepalive_timeout"] == 30.0
    assert d["replay_buffer_bytes"] == 64 << 20
    assert d["return_after_share"] is True
    assert d["drain"] == "average"


def test_bad_options_are_refused_before_anything_starts():
    model = torch.nn.Linear(4, 2)
    with pytest.raises(TypeError, match="unknown options \\['batch_size'\\]"):
        rog.connect("127.0.0.1:1", model, worker_id="a", batch_size=4)
    with pytest.raises(rog.InvalidArgument, match="batch_bytes must be at least 1024"):
        rog.connect("127.0.0.1:1", model, worker_id="a", batch_bytes=10)
    with pytest.raises(rog.InvalidArgument, match="wrong type"):
        rog.connect("127.0.0.1:1", model, worker_id="a", keepalive_timeout="long")
    with pytest.raises(rog.InvalidArgument, match="drain='median' is not a drain rule"):
        rog.connect("127.0.0.1:1", model, worker_id="a", drain="median")
    with pytest.raises(rog.InvalidArgument) as e:
        rog.connect("127.0.0.1:1", model, worker_id="no spaces")
    assert isinstance(e.value, rog.Error) and e.value.code == 3
    assert "worker id 'no spaces' is invalid" in e.value.message
    with pytest.raises(TypeError, match="int64"):
        rog.connect("127.0.0.1:1", torch.nn.Embedding(3, 2).to(torch.int64), worker_id="a")


def test_connecting_to_nothing_times_out_saying_why():
    model = torch.nn.Linear(4, 2)
    with pytest.raises(rog.DeadlineExceeded, match="not connected to rogd at 127.0.0.1:1"):
        rog.connect("127.0.0.1:1", model, worker_id="a", timeout=0.5)
