"""docs/ is built from the repository (docs/generate.py) and must say what the repository says now."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_generated_page_is_current():
    gen = _generator()
    built = gen.build()
    stale = gen.stale(built, gen.spliced())
    assert not stale, f"stale: {', '.join(stale)}: run `{gen.COMMAND}` and commit the pages"
    # built again, a page must not change (the tier pages rest on tiers that are the same in every process:
    # tests/cases/test_tiers.py; rebuilding them here would double the unit loop's longest test)
    again = {name: page() for name, page in gen.PAGES.items() if name not in ("tiers.md", "findings.md")}
    assert again == {name: built[name] for name in again}, "two builds differ: a page depends on something else"


def test_the_readme_links_every_page():
    readme = (ROOT / "README.md").read_text()
    pages = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    assert pages, "docs/ has no page"
    missing = [p for p in pages if f"docs/{p}" not in readme]
    assert not missing, f"the README does not link {missing}"


def test_a_stale_page_is_named_with_the_command_that_regenerates_it(tmp_path, monkeypatch, capsys):
    gen = _generator()
    monkeypatch.setattr(gen, "DOCS", tmp_path)
    # the check's wording and exit code, on pages whose builders are cheap (the real ones: the test above)
    monkeypatch.setattr(gen, "PAGES", {name: (lambda name=name: f"the page {name} as built\n") for name in gen.PAGES})
    for name in gen.PAGES:
        (tmp_path / name).write_text("an old page\n")
    monkeypatch.setattr(gen, "BLOCKS", {})
    assert gen.main(["--check"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"docs/{n} is stale: run `python docs/generate.py`" for n in gen.PAGES]


def test_the_readmes_and_the_guides_layer_lists_are_the_one_the_import_test_checks(tmp_path, monkeypatch):
    """A layer list edited by hand, or a LAYERS that moved, makes the docs check fail."""
    gen = _generator()
    from harness.layers import LAYERS

    for path in gen.BLOCKS:
        text = (ROOT / path).read_text()
        block = text.split("from harness/layers.py -->\n", 1)[1].split("<!-- /layers -->")[0]
        assert [line.split()[0] for line in block.splitlines()[2:-1]] == [name for name, _ in LAYERS], path
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    (tmp_path / "docs" / "guide").mkdir(parents=True)
    for path in gen.BLOCKS:
        (tmp_path / path).write_text((ROOT / path).read_text().replace("  judging ", "  judges  "))
    assert sorted(gen.stale({}, gen.spliced())) == sorted(gen.BLOCKS)
