"""The tier store gives back what the build gives, and nothing a source change could make stale."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.cases import tier_store, tiers


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(tier_store, "STORE", tmp_path)
    monkeypatch.delenv("HARNESS_NO_TIER_STORE", raising=False)
    return tmp_path


@pytest.mark.parametrize("target", ["tosa", "ethos-u55-128"])
def test_a_stored_tier_is_the_built_one(store, target):
    built = tiers._built("smoke", target)
    calls = []

    def build():
        calls.append(1)
        return built

    first = tier_store.stored("smoke", target, build)
    again = tier_store.stored("smoke", target, build)
    assert calls == [1] and len(list(store.iterdir())) == 1, "built once, then read back"
    assert [c.descriptor for c in again] == [c.descriptor for c in first] == [c.descriptor for c in built]
    assert again == built and again is not built


def test_an_unreadable_store_file_is_built_again(store):
    tier_store.stored("smoke", "tosa", lambda: tiers._built("smoke", "tosa"))
    (path,) = store.iterdir()
    path.write_bytes(b"not a pickle")
    assert tier_store.stored("smoke", "tosa", lambda: ("rebuilt",)) == ("rebuilt",)


def test_no_store_builds_every_time(store, monkeypatch):
    monkeypatch.setenv("HARNESS_NO_TIER_STORE", "1")
    assert tier_store.stored("smoke", "tosa", lambda: (1,)) == (1,)
    assert tier_store.stored("smoke", "tosa", lambda: (2,)) == (2,) and not list(store.iterdir())


def test_the_key_follows_every_source(tmp_path, monkeypatch):
    src = tmp_path / "harness"
    (src / "cases").mkdir(parents=True)
    (src / "cases" / "tiers.py").write_text("A = 1\n")
    (src / "config.py").write_text("B = 1\n")
    monkeypatch.setattr(tier_store, "HARNESS", src)
    monkeypatch.setattr(tier_store, "SOURCES", ("cases", "config.py"))
    before = tier_store.key()
    (src / "config.py").write_text("B = 2\n")
    after_config = tier_store.key()
    (src / "cases" / "new.json").write_text("{}")
    assert len({before, after_config, tier_store.key()}) == 3


@pytest.mark.processes
def test_building_every_tier_reads_no_harness_module_outside_the_sources():
    """The key covers the build: a fresh process building every tier for every target imports only harness
    modules under `SOURCES` (a new import from elsewhere would make a stored tier stale: add it there)."""
    code = (
        "import json, sys\n"
        "from harness.cases.tiers import BY_NAME, cases_of\n"
        "for t in ('tosa', 'ethos-u55-128'):  # the two kinds of tier build (TOSA-profile, Ethos-U)\n"
        "    for n in BY_NAME: cases_of(n, target=t)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('harness'))))\n"
    )
    env = {**os.environ, "HARNESS_NO_TIER_STORE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    modules = json.loads(out)
    allowed = tuple(f"harness.{s.removesuffix('.py')}" for s in tier_store.SOURCES)
    outside = [m for m in modules if m != "harness" and not m.startswith(allowed)]
    assert "harness.cases.crossed" in modules and not outside, outside
