"""Test-only settings: property tests draw the same examples on every run, so
CI is deterministic; explore new ones with `--hypothesis-profile=default`."""

from hypothesis import settings

settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")
