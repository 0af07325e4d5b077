"""Headless Chromium for the tests that check a rendered page (Debian's package; installed here when absent)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def chromium() -> str:
    """Debian's chromium; installed here when absent (the CI entry point installs it too)."""
    found = shutil.which("chromium")
    if found is None and shutil.which("apt-get") and os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], capture_output=True, timeout=600)
        found = shutil.which("chromium")
    if found is None:
        pytest.skip("headless Chromium is absent and could not be installed (Debian's chromium package, as root)")
    return found


def headless(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    """Chromium headless with no network chatter, a fresh profile in `profile`."""
    return subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=10000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
