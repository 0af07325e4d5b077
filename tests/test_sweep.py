"""The sweep in this repository's test run: the packaged sweep test (harness.pytest_plugin.test_cases), marked
as a lowering, whole-tier run. Select cases with the plugin's `--harness-*` options."""

from __future__ import annotations

import pytest

from harness.pytest_plugin.test_cases import test_case  # noqa: F401 - collected here

pytestmark = [pytest.mark.lowering, pytest.mark.tier]
