"""The libraries' known noise, dropped where it arises: exactly these messages, nothing else.

Three lines used to open every command's output, none of them about the run:
torchao failing to load two kernel libraries this machine cannot use (a CUDA
cutlass build, and an mxfp8 build for another Python), and torch's pytree
deprecating `register_constant` on the Enums torchao registers. Each filter
names its logger and the exact message; anything else those loggers say still
prints (another library torchao fails to load is news). The filters sit on the
loggers themselves, installed when `harness` is imported, before torch or
torchao are.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

# (logger, the message's pattern, why it is noise here)
KNOWN_NOISE: tuple[tuple[str, str, str], ...] = (
    (
        "torchao",
        r"Failed to load \S*/torchao/_C_mxfp8\.[^/\s]*\.so: ",
        "torchao's mxfp8 kernels, built for another Python and for CUDA: unused on a CPU conv",
    ),
    (
        "torchao",
        r"Failed to load \S*/torchao/_C_cutlass_90a\.[^/\s]*\.so: ",
        "torchao's cutlass kernels for sm_90a GPUs: unused on a CPU conv",
    ),
    (
        "torch.utils._pytree",
        r".* is an Enum subclass and is now natively supported by torch\.compile as an opaque "
        r"value type\. Calling register_constant\(\) on Enum subclasses is deprecated",
        "torchao registers its Enums the way torch has just deprecated; nothing of ours, nothing a case uses",
    ),
)


@dataclass(frozen=True)
class KnownNoise(logging.Filter):
    """Drops a record whose message matches `pattern` (from the start); passes every other."""

    pattern: re.Pattern

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            return not self.pattern.match(record.getMessage())
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is not ours to drop
            return True


def install() -> None:
    """Attach each filter to its logger, once (a process importing `harness` twice adds none twice)."""
    for name, pattern, _ in KNOWN_NOISE:
        logger = logging.getLogger(name)
        if not any(isinstance(f, KnownNoise) and f.pattern.pattern == pattern for f in logger.filters):
            logger.addFilter(KnownNoise(re.compile(pattern)))
