"""Reference numerics for the ExecuTorch Arm backend's convolution lowering.

A process started under `--executorch` or `--tools` (a sweep's workers, pytest-xdist's, a Ray task) finds the
overlays' paths in HARNESS_EXECUTORCH_PATH and HARNESS_TOOLS_PATH and keeps them first on its import path, even
where the process launcher replaced `sys.path` (xdist hands its workers the controller's startup path).
"""

import os as _os
import sys as _sys

for _overlay in [
    *_os.environ.get("HARNESS_TOOLS_PATH", "").split(_os.pathsep),
    _os.environ.get("HARNESS_EXECUTORCH_PATH"),
]:
    if _overlay and _overlay not in _sys.path:
        _sys.path.insert(0, _overlay)

from harness import quiet as _quiet  # noqa: E402 - the libraries' known noise, filtered before they load

_quiet.install()
