"""A pytest plugin for the proof tests (`-p tests.pytest_plugin.broken_proof`): the session's proof runs the
stand-in case function of tests/broken_env_case.py, whose seed says what is broken, instead of lowering."""

from __future__ import annotations

from harness.config import parse_descriptor
from harness.pytest_plugin import recorder
from harness.run.settings import RunSettings
from tests.broken_env_case import run_case


def _stand_in(config):
    def run(descriptor: str, canary: str):
        settings = RunSettings(config.getoption("harness_seed"), config.getoption("harness_target"), None, canary, "p")
        return run_case(parse_descriptor(descriptor), settings)

    return run


recorder.proof_runner = _stand_in
