"""A change to ExecuTorch, and the cases of a tier it can affect: the ones whose line trace reaches a line it touches.

`sweep --affected-by SPEC` runs, of the tier, the smoke tier plus every case whose recorded trace (the lines
of the traced modules, `harness.policy.mutation.MODULES`, that the case ran on the installed ExecuTorch:
`harness.mutation.reach`, the trace the mutation tool selects a mutant's cases by) holds a line the change
touches. The argument is the mutation tool's: code a case never runs cannot change its result.

SPEC is a source tree: 'PATH' (its working tree against its HEAD), 'PATH@REV' (that commit's own change,
against its first parent) or 'PATH@A..B' (the commits from A to B). The change's lines are the old side of
`git diff`: the lines it rewrites or deletes, and the two lines around each insertion, each grown to the
statement it is part of. The traces were made on
the installed files, so each line is carried from the change's base file to the installed one through their
own diff: a line in a stretch both sides share maps to its line; one in a stretch they differ in maps to the
whole installed stretch (and the lines around it), a superset.

What it cannot see: a change to any other package file (another pass, the quantizer, exir, the serializer),
whose lines no trace records. Then every case of the tier runs, and the selection says so. A file outside the
package (docs, CI, a test folder: the harness never imports ExecuTorch's test code) changes nothing a case runs.
"""

from __future__ import annotations

import ast
import difflib
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.config import ConfigError, ConvConfig
from harness.overlays import git, sources, top_names
from harness.overlays.sources import is_package_file
from harness.policy.mutation import MODULES

Lines = dict[str, set[int]]  # traced module -> line numbers of its installed file
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
TEST_PARTS = ("test", "tests")


@dataclass
class Change:
    spec: str
    top: Path
    base: str  # the commit the change starts from
    head: str  # the commit it ends at; '' for the working tree
    touched: Lines = field(default_factory=dict)  # traced module -> installed lines the change touches
    whole: set[str] = field(default_factory=set)  # traced modules changed outside a function: every case using them
    unseen: list[str] = field(default_factory=list)  # package files no trace covers that the change touches
    outside: list[str] = field(default_factory=list)  # files outside the package (docs, CI, test code)

    @property
    def run_on(self) -> str:
        """The --executorch spec the selected cases run on: the change's end."""
        return f"{self.top}@{self.head}" if self.head else str(self.top)


def _commit(top: Path, spec: str, rev: str) -> str:
    done = git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if done.returncode:
        raise ConfigError(f"invalid --affected-by {spec}: {rev} is not a commit of {top}")
    return done.stdout.strip()


def parse(spec: str) -> tuple[Path, str, str]:
    """(top, base, head) of 'PATH', 'PATH@REV' or 'PATH@A..B'; ConfigError naming what is wrong."""
    path, _, rev = spec.rpartition("@") if "@" in spec else (spec, "", "")
    top = Path(path).expanduser()
    done = git(top, "rev-parse", "--show-toplevel", check=False) if top.is_dir() else None
    if done is None or done.returncode:
        raise ConfigError(f"invalid --affected-by {spec}: {path} is not a git checkout (PATH, PATH@REV or PATH@A..B)")
    top = Path(done.stdout.strip())
    if not rev:
        return top, _commit(top, spec, "HEAD"), ""
    if ".." in rev:
        a, _, b = rev.partition("..")
        if not a or not b:
            raise ConfigError(f"invalid --affected-by {spec}: a range is A..B, both ends named")
        return top, _commit(top, spec, a), _commit(top, spec, b)
    head = _commit(top, spec, rev)
    parents = git(top, "rev-list", "--parents", "-n", "1", head).stdout.split()[1:]
    if not parents:
        raise ConfigError(f"invalid --affected-by {spec}: {rev} has no parent to compare it with (give A..B)")
    return top, parents[0], head


def old_lines(diff: str) -> dict[str, set[int]]:
    """Repository path -> the lines of the old side a `git diff -U0` touches (rewritten or deleted lines; the two
    lines around a pure insertion)."""
    out: dict[str, set[int]] = {}
    path = ""
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            path = line.split(" a/", 1)[1].split(" b/", 1)[0]
            out.setdefault(path, set())
        elif line.startswith("@@") and path:
            m = _HUNK.match(line)
            if m:
                start, count = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
                out[path] |= set(range(start, start + count)) if count else {start, start + 1}
    return out


@functools.lru_cache(maxsize=16)
def _spans(text: str) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]] | None:
    """(statement spans, function bodies) of a source text; None when it does not parse."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    spans: list[tuple[int, int]] = []
    bodies: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
            bodies.append((node.body[0].lineno, node.end_lineno))
        if isinstance(node, ast.excepthandler) and node.end_lineno is not None:  # its clause decides its body
            spans.append((node.lineno, node.end_lineno))
        elif isinstance(node, ast.stmt) and node.end_lineno is not None:
            body = [b for b in getattr(node, "body", []) if isinstance(b, ast.stmt)]
            end = body[0].lineno - 1 if body else node.end_lineno
            spans.append((node.lineno, max(end, node.lineno)))
    return tuple(spans), tuple(bodies)


def statements(lines: set[int], text: str) -> tuple[set[int], bool]:
    """`lines` grown to the whole of each simple statement they fall in (a compound one's header, an except clause
    with its body, whose running the clause decides): a change to one line of an expression over several changes
    what runs on every line of it, and a trace records the line an instruction belongs to. True with them when a
    line lies outside every function body (module or class level, a def's own line, a decorator: run at import,
    before any trace) or the file does not parse: then every case that runs the module is affected."""
    parsed = _spans(text)
    if parsed is None:
        return set(lines), True
    spans, bodies = parsed
    out = set(lines)
    for n in lines:
        inner = [sp for sp in spans if sp[0] <= n <= sp[1]]
        if inner:
            first, last = min(inner, key=lambda sp: sp[1] - sp[0])
            out |= set(range(first, last + 1))
    outside = any(not any(a <= n <= b for a, b in bodies) for n in out)
    return out, outside


def carry(lines: set[int], base: list[str], installed: list[str]) -> set[int]:
    """The installed file's lines that `lines` of the base file are: through the two files' own diff; a line in
    a stretch they differ in gives the whole installed stretch and the lines around it."""
    out: set[int] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, base, installed, autojunk=False).get_opcodes():
        hit = {n for n in lines if i1 < n <= i2}
        if not hit:
            continue
        if tag == "equal":
            out |= {j1 + (n - i1) for n in hit}
        else:
            out |= set(range(j1, j2 + 2))
    return {n for n in out if n > 0}


def package_path(repo_path: str, mapping: dict[str, str]) -> str:
    """The package path of a repository file; '' when the package holds no such file (docs, CI, scripts) or it
    is test code (the harness never imports ExecuTorch's tests)."""
    if any(p in TEST_PARTS for p in repo_path.split("/")):
        return ""
    for repo, package in sorted(mapping.items(), key=lambda kv: -len(kv[0])):
        if repo_path == repo or repo_path.startswith(repo + "/"):
            path = package + repo_path[len(repo) :]
            return path if is_package_file(path) else ""
    return ""


def read_change(spec: str, installed: dict[str, Path]) -> Change:
    """The change SPEC names, its lines carried onto the installed traced files (`installed`: module -> file)."""
    top, base, head = parse(spec)
    change = Change(spec, top, base, head)
    diff = git(top, "diff", "-U0", "--no-renames", "--no-color", base, *([head] if head else []), "--").stdout
    touched = old_lines(diff)
    if not head:  # a working tree's new files are part of its change
        untracked = git(top, "ls-files", "--others", "--exclude-standard").stdout.splitlines()
        touched.update({p: set() for p in untracked})
    mapping = sources.package_folders(top, base, top_names())
    traced = {rel: module for module, rel in MODULES.items()}
    for repo_path, lines in sorted(touched.items()):
        path = package_path(repo_path, mapping)
        if not path:
            change.outside.append(repo_path)
        elif path in traced and traced[path] in installed:
            module = traced[path]
            base_text = git(top, "show", f"{base}:{repo_path}", check=False).stdout  # '' for a file the change adds
            mine = installed[module].read_text().splitlines()
            grown, outside = statements(lines, base_text)
            change.touched[module] = change.touched.get(module, set()) | carry(grown, base_text.splitlines(), mine)
            if outside or not lines:
                change.whole.add(module)
        else:
            change.unseen.append(path)
    return change


@dataclass
class Selection:
    cases: list[ConvConfig]
    reaching: int  # cases whose trace reaches a touched line
    smoke: int  # cases of the smoke tier among those selected
    untraced: int  # cases the trace does not hold (run, being unknown)
    why: str  # one line: what was selected and why


def select(configs: list[ConvConfig], smoke: set[str], trace: dict[str, Lines], change: Change) -> Selection:
    """The cases of `configs` the change can affect, in tier order, with the smoke tier's."""
    if change.unseen:
        shown = ", ".join(change.unseen[:3]) + (f" and {len(change.unseen) - 3} more" if len(change.unseen) > 3 else "")
        return Selection(
            list(configs),
            0,
            0,
            0,
            f"all {len(configs)} cases: the change touches package files no trace covers ({shown})",
        )
    reaching, untraced, out = 0, 0, []
    for c in configs:
        lines = trace.get(c.descriptor)
        hit = lines is not None and any(
            bool(lines.get(m)) if m in change.whole else bool(change.touched[m] & lines.get(m, set()))
            for m in change.touched
        )
        reaching += hit
        untraced += lines is None
        if hit or lines is None or c.descriptor in smoke:
            out.append(c)
    in_smoke = sum(1 for c in out if c.descriptor in smoke)
    where = (
        ", ".join(
            f"{m} {'outside a function: any of its lines' if m in change.whole else f'{len(v)} line(s)'}"
            for m, v in sorted(change.touched.items())
        )
        or "no traced line"
    )
    return Selection(
        out,
        reaching,
        in_smoke,
        untraced,
        f"{len(out)} of {len(configs)} cases: {reaching} reach a touched line ({where}), {in_smoke} smoke"
        + (f", {untraced} not in the trace" if untraced else "")
        + (f"; {len(change.outside)} file(s) outside the package changed, none a case runs" if change.outside else ""),
    )
