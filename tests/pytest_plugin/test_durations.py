"""The longest work first under xdist, from the durations of an earlier run (harness.pytest_plugin.durations)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from harness.pytest_plugin.durations import DurationsError, bare, load, order_units


def test_units_go_out_longest_first_and_an_unknown_test_counts_as_the_median():
    known = {"t.py::a": 1.0, "t.py::b": 30.0, "t.py::c[x]": 2.0, "t.py::c[y]": 2.0, "t.py::d": 5.0}
    units = [
        ("t.py::a", ["t.py::a"]),
        ("pack", ["t.py::c[x]", "t.py::c[y]"]),
        ("t.py::new", ["t.py::new"]),
        ("t.py::b", ["t.py::b"]),
        ("t.py::d", ["t.py::d"]),
    ]
    # a 1, pack 4, new 2 (the median), b 30, d 5; equal costs keep their order
    assert [s for s, _ in order_units(units, known)] == ["t.py::b", "t.py::d", "pack", "t.py::new", "t.py::a"]
    # nothing known: every test counts alike, so a unit's size decides (as xdist's own reordering of scopes)
    assert [s for s, _ in order_units(units, {})] == ["pack", "t.py::a", "t.py::new", "t.py::b", "t.py::d"]


def test_the_group_suffix_of_xdist_is_not_part_of_a_tests_name():
    assert bare("t.py::test_a@heavy") == "t.py::test_a"
    assert bare("t.py::test_a[x@y]") == "t.py::test_a[x@y]"
    assert bare("t.py::test_a[x]@g") == "t.py::test_a[x]"


@pytest.mark.parametrize(
    "text, why", [("[1, 2]", "must be a JSON object"), ('{"a": -1}', "must be a JSON object"), ("{", "not a JSON file")]
)
def test_a_bad_durations_file_is_one_line_naming_it(tmp_path, text, why):
    path = tmp_path / "d.json"
    path.write_text(text)
    with pytest.raises(DurationsError, match=f"invalid --harness-durations {path}: {why}"):
        load(path)
    with pytest.raises(DurationsError, match="no such file"):
        load(tmp_path / "absent.json")


@pytest.mark.processes
def test_a_session_stores_its_durations_and_the_next_starts_the_longest_first(tmp_path):
    """Two workers, five tests: stored from one run, the two longest start first in the next, whatever the
    collection order."""
    (tmp_path / "test_some.py").write_text(
        textwrap.dedent("""
        import os, time, pytest

        @pytest.mark.parametrize("name, seconds", [("a", 0.1), ("b", 0.1), ("c", 0.1), ("d", 1.2), ("e", 1.0)])
        def test_t(name, seconds):
            with open(os.environ["ORDER_LOG"], "a") as f:
                f.write(name + "\\n")
            time.sleep(seconds)
    """)
    )
    stored, log = tmp_path / "d.json", tmp_path / "order.log"

    def run(*extra: str) -> list[str]:
        log.write_text("")
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", "test_some.py", *extra],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**__import__("os").environ, "ORDER_LOG": str(log)},
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return log.read_text().split()

    run("--harness-store-durations", str(stored))
    seconds = json.loads(stored.read_text())
    assert set(seconds) == {
        f"test_some.py::test_t[{n}-{s}]" for n, s in [("a", 0.1), ("b", 0.1), ("c", 0.1), ("d", 1.2), ("e", 1.0)]
    }
    assert seconds["test_some.py::test_t[d-1.2]"] >= 1.2
    order = run("--harness-durations", str(stored))
    assert set(order[:2]) == {"d", "e"} and sorted(order) == list("abcde")
