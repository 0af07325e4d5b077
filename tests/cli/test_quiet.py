"""The libraries' three known noise lines are dropped, exactly those: a command's first line is the harness's."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

import harness  # noqa: F401 - installs the filters
from harness.quiet import KNOWN_NOISE

SITE = "/venv/lib/python3.11/site-packages"
NOISE = [
    ("torchao", f"Failed to load {SITE}/torchao/_C_mxfp8.cpython-310-x86_64-linux-gnu.so: Could not load this library"),
    ("torchao", f"Failed to load {SITE}/torchao/_C_cutlass_90a.abi3.so: Could not load this library: x"),
    (
        "torch.utils._pytree",
        "<enum 'KernelPreference'> is an Enum subclass and is now natively supported by "
        "torch.compile as an opaque value type. Calling register_constant() on Enum subclasses "
        "is deprecated and will be an error in a future release.",
    ),
]
NEWS = [  # what those loggers say that is not the known noise still prints
    ("torchao", f"Failed to load {SITE}/torchao/_C.abi3.so: undefined symbol"),
    ("torchao", "Skipping import of cpp extensions"),
    ("torch.utils._pytree", "<class 'Foo'> is not registered"),
]


def _printed(name: str, message: str, caplog) -> bool:
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger=name):
        logging.getLogger(name).warning(message)
    return any(r.getMessage() == message for r in caplog.records)


@pytest.mark.parametrize("name, message", NOISE)
def test_the_known_noise_is_dropped(name, message, caplog):
    assert not _printed(name, message, caplog)


@pytest.mark.parametrize("name, message", NEWS)
def test_anything_else_those_loggers_say_still_prints(name, message, caplog):
    assert _printed(name, message, caplog)


def test_each_filter_says_why_and_is_installed_once():
    import harness.quiet

    harness.quiet.install()
    for name, _, why in KNOWN_NOISE:
        assert why and len(logging.getLogger(name).filters) == sum(n == name for n, _, _ in KNOWN_NOISE)


@pytest.mark.lowering
def test_a_command_prints_its_own_line_first():
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "conv2d_ic4_oc8_i8x8_k3_qfp32"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[0] == "outcome: pass"
    assert proc.stderr == "", proc.stderr[-2000:]
