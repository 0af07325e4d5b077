"""Reference numerics for the ExecuTorch Arm backend's convolution lowering.

A process started under `--executorch` (a sweep's workers, pytest-xdist's, a Ray task) finds the overlay's
path in HARNESS_EXECUTORCH_PATH and keeps it first on its import path, even where the process launcher
replaced `sys.path` (xdist hands its workers the controller's startup path).
"""

import os as _os
import sys as _sys

_OVERLAY = _os.environ.get("HARNESS_EXECUTORCH_PATH")
if _OVERLAY and _OVERLAY not in _sys.path:
    _sys.path.insert(0, _OVERLAY)

from harness import quiet as _quiet  # noqa: E402 - the libraries' known noise, filtered before they load

_quiet.install()
