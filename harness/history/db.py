"""The run history: every sweep and every case result, in SQLite.

One row per run (tier, seed, filter, target, shard, versions, host, start and
end, status) and one per case per run, holding the case's whole results line
(the JSONL exchange format, `harness.results.store`) beside the columns that
queries filter on. Each case is written in its own transaction the moment it
ends, so a crash, SIGKILL or SIGINT loses nothing that finished; the database
runs in WAL mode with a busy timeout, so several sweeps (and xdist workers)
can write to one file at once. Its schema carries a version, and older
databases are migrated forward on opening.

Standard library only: the parent of a sweep stays free of torch.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.results.case_result import CaseResult
from harness.results.store import parse_line, read_results

DEFAULT_DB = "reports/history.sqlite"
SCHEMA_VERSION = 2
BUSY_TIMEOUT_S = 60

# MIGRATIONS[v] takes a database at schema version v to v + 1.
MIGRATIONS: dict[int, str] = {
    0: """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY, tier TEXT NOT NULL, seed INTEGER NOT NULL, random INTEGER NOT NULL DEFAULT 0,
        filter TEXT NOT NULL DEFAULT '', target TEXT NOT NULL, canary TEXT NOT NULL DEFAULT '',
        shard TEXT NOT NULL DEFAULT '', expected INTEGER, started REAL NOT NULL, ended REAL,
        status TEXT NOT NULL, host TEXT NOT NULL, versions TEXT NOT NULL, command TEXT NOT NULL DEFAULT '');
    CREATE TABLE results (
        run_id TEXT NOT NULL REFERENCES runs(run_id), descriptor TEXT NOT NULL, seed INTEGER NOT NULL,
        outcome TEXT NOT NULL, actual_outcome TEXT NOT NULL, issue TEXT NOT NULL, rule TEXT NOT NULL,
        green INTEGER NOT NULL, total_s REAL, line TEXT NOT NULL, written REAL NOT NULL,
        PRIMARY KEY (run_id, descriptor, seed));
    CREATE INDEX results_by_descriptor ON results(descriptor);
    """,
    1: "ALTER TABLE runs ADD COLUMN part TEXT NOT NULL DEFAULT ''",
}

RUNNING, COMPLETE, INTERRUPTED = "running", "complete", "interrupted"
BROKEN = "broken"  # the controls or the canary showed the harness or the environment broken (schedule/proof.py)


class HistoryError(ValueError):
    """A history database or reference that cannot be used (one line naming it)."""


@dataclass
class RunInfo:
    """What a run was asked to do, and where and with what it ran."""

    run_id: str
    tier: str
    seed: int
    target: str
    random: int = 0
    filter: str = ""
    canary: str = ""
    shard: str = ""
    expected: int | None = None  # cases the run was to run
    started: float = field(default_factory=time.time)
    ended: float | None = None
    status: str = RUNNING
    host: str = field(default_factory=socket.gethostname)
    versions: dict = field(default_factory=dict)
    command: str = ""
    part: str = ""  # the results part file the sweep writes each case to first (see `History.reconcile`)

    @property
    def wall_s(self) -> float | None:
        return None if self.ended is None else self.ended - self.started


def backend_label(versions: dict) -> str:
    """The ExecuTorch a run ran against: its source tree ('path@commit'), or its release."""
    return versions.get("executorch-tree") or versions.get("executorch", "")


@dataclass
class RunSummary:
    run: RunInfo
    counts: dict[str, int]  # outcome -> cases
    cases: int
    green: int
    case_seconds: float

    @property
    def all_green(self) -> bool:
        return self.cases > 0 and self.green == self.cases


class History(contextlib.AbstractContextManager):
    """A history database, opened (created, migrated) at `path`; `with History(path) as h:` closes it."""

    def __init__(self, path: str | Path = DEFAULT_DB):
        self.path = Path(path)
        if self.path.exists() and self.path.is_dir():
            raise HistoryError(f"history database {self.path} is a directory")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._migrate()
        except sqlite3.DatabaseError as e:
            raise HistoryError(f"{self.path} is not a usable history database: {e}") from None

    # -- schema ----------------------------------------------------------------------
    def _version(self) -> int:
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return 0
        if "meta" not in tables:
            raise HistoryError(
                f"{self.path} is an SQLite database, but not a harness history (no meta table; "
                f"tables: {', '.join(sorted(tables))})"
            )
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or not str(row[0]).isdigit():
            raise HistoryError(f"{self.path} has no valid schema version")
        return int(row[0])

    def _migrate(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")  # one process migrates, the others wait and see it done
        try:
            version = self._version()
            if version > SCHEMA_VERSION:
                raise HistoryError(
                    f"{self.path} has history schema version {version}; this harness knows "
                    f"versions up to {SCHEMA_VERSION}: use a newer harness"
                )
            if version == 0:
                self._db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            for v in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[v].split(";"):
                    if statement.strip():
                        self._db.execute(statement)
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    # -- writing -----------------------------------------------------------------------
    def ensure_run(self, run: RunInfo) -> None:
        """Record the run (once: the first of several writers wins)."""
        d = asdict(run)
        d["versions"] = json.dumps(run.versions, sort_keys=True)
        columns = ", ".join(d)
        self._db.execute(
            f"INSERT OR IGNORE INTO runs ({columns}) VALUES ({', '.join('?' * len(d))})", tuple(d.values())
        )

    def record(self, result: CaseResult) -> None:
        """One case's result, in its own transaction (a later write of the same case replaces it)."""
        self._db.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", self._row(result))

    @staticmethod
    def _row(r: CaseResult) -> tuple:
        return (
            r.run_id,
            r.descriptor,
            r.seed,
            r.outcome.value,
            r.actual_outcome,
            r.issue,
            r.rule,
            int(r.green),
            r.timings_s.get("total"),
            r.to_json(),
            time.time(),
        )

    def reopen_run(self, run_id: str, part: str = "") -> None:
        """A resumed run is running again (`sweep --resume`), writing first to `part`."""
        self._db.execute("UPDATE runs SET ended = NULL, status = ?, part = ? WHERE run_id = ?", (RUNNING, part, run_id))

    def reconcile(self, run: RunInfo) -> None:
        """Take in the cases a killed sweep wrote to its part file but not here.

        A sweep writes each case to its part file, then here: a SIGKILL between the two leaves the
        case only in the file. The file is the truth while the run is open, so reading a running run
        first adds what the file has and the database lacks (a cut last line is skipped: that case
        never finished). Rows already here are kept; a live sweep's own later write replaces them.
        """
        path = Path(run.part) if run.status == RUNNING and run.part else None
        if path is None or not path.is_file():
            return
        for r in read_results(path, tolerate_cut_end=True):
            self._db.execute("INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", self._row(r))

    def finish_run(self, run_id: str, status: str = COMPLETE, ended: float | None = None) -> None:
        self._db.execute(
            "UPDATE runs SET ended = ?, status = ? WHERE run_id = ?",
            (ended if ended is not None else time.time(), status, run_id),
        )

    def delete_run(self, run_id: str) -> None:
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("DELETE FROM results WHERE run_id = ?", (run_id,))
            self._db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))

    # -- reading -----------------------------------------------------------------------
    def run(self, run_id: str) -> RunInfo:
        row = self._db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise HistoryError(f"no run {run_id!r} in {self.path}; `python -m harness runs` lists them")
        return self._run_info(row)

    def _run_info(self, row) -> RunInfo:
        names = [c[0] for c in self._db.execute("SELECT * FROM runs LIMIT 0").description]
        d = {k: v for k, v in zip(names, row) if k in RunInfo.__dataclass_fields__}
        d["versions"] = json.loads(d["versions"])
        return RunInfo(**d)

    def results(self, run_id: str) -> list[CaseResult]:
        self.reconcile(self.run(run_id))
        rows = self._db.execute("SELECT line FROM results WHERE run_id = ? ORDER BY rowid", (run_id,)).fetchall()
        return [parse_line(line) for (line,) in rows]

    def summaries(self, limit: int | None = None, like: RunInfo | None = None) -> list[RunSummary]:
        """Runs, newest first, with their outcome counts; `like`: only runs of the same tier, target, filter, shard
        and ExecuTorch (a release or a tree: a nightly on 1.4.1 is never the baseline of one on 1.5.1)."""
        where, args = "", []
        if like is not None:
            where = "WHERE tier = ? AND target = ? AND filter = ? AND shard = ? AND random = ?"
            args = [like.tier, like.target, like.filter, like.shard, like.random]
        query = f"SELECT * FROM runs {where} ORDER BY started DESC" + (
            f" LIMIT {int(limit)}" if limit and like is None else ""
        )
        out = []
        for row in self._db.execute(query, args).fetchall():
            run = self._run_info(row)
            if like is not None and backend_label(run.versions) != backend_label(like.versions):
                continue
            self.reconcile(run)
            counts = dict(
                self._db.execute(
                    "SELECT outcome, COUNT(*) FROM results WHERE run_id = ? GROUP BY outcome", (run.run_id,)
                ).fetchall()
            )
            cases, green, seconds = self._db.execute(
                "SELECT COUNT(*), COALESCE(SUM(green), 0), COALESCE(SUM(total_s), 0) FROM results WHERE run_id = ?",
                (run.run_id,),
            ).fetchone()
            out.append(RunSummary(run, counts, cases, green, seconds))
            if limit and len(out) >= limit:
                break
        return out

    def resolve(self, ref: str, like: RunInfo | None = None, before: float | None = None, excluding: str = "") -> str:
        """A run id from `ref`: a run id, 'last' (newest complete run) or 'last-green' (newest complete run
        whose every case is green); with `like`, among runs of the same kind; with `before`, older ones only;
        never the run `excluding` names (a resumed run, whose start is older than its end)."""
        if ref not in ("last", "last-green"):
            return self.run(ref).run_id
        for s in self.summaries(like=like):
            if (
                s.run.status != COMPLETE
                or (before is not None and s.run.started >= before)
                or s.run.run_id == excluding
            ):
                continue
            if ref == "last" or s.all_green:
                return s.run.run_id
        kind = f" of tier {like.tier} on {like.target}" if like else ""
        raise HistoryError(f"no {ref} run{kind} in {self.path}")

    def close(self) -> None:
        self._db.close()

    def __exit__(self, *exc) -> None:
        self.close()
