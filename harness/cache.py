"""Where the harness keeps what it can rebuild: release overlays, speed-up proofs, mutant lists.

`$HARNESS_CACHE`, else `~/.cache/conv-harness`. Everything under it is keyed by
what it was made from, so deleting it costs time, never a result.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(os.environ.get("HARNESS_CACHE", Path.home() / ".cache" / "conv-harness"))
