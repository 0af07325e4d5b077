"""This repository's own test run. The sweep's plugin is not here: it is `harness.pytest_plugin`, which the
package registers through its `pytest11` entry point (so any pytest run with the package installed has it).
"""

from __future__ import annotations

import pytest


def pytest_configure(config):
    if not config.pluginmanager.has_plugin("conv-harness"):
        raise pytest.UsageError(
            "the harness's pytest plugin is not registered: install the package "
            "(pip install -e '.[test]') so that its pytest11 entry point 'conv-harness' is"
        )
