"""Which speed-ups are on in this process, and why each other one is off.

`install` runs every speed-up's probe (`harness.speedups.catalog`), then, for
those that pass, an end-to-end proof: a few small programs lowered with the
speed-ups off and on must give byte-identical flatbuffers. A speed-up that
fails its probe, or whose presence changes a flatbuffer, stays off; the rest
of the run is the plain flow's. The proof's verdict is cached on disk per
environment (torch, torchao, the ExecuTorch that is imported, wherever it
lies, and the speed-ups' own sources), so only the first process of a new
environment pays for it (about 3 s). HARNESS_NO_SPEEDUPS=1 turns them all off.

The state is one line (`State.line`), which a run prints once and every
result carries (`versions['harness-speedups']`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from harness import cache
from harness.speedups.base import Undo, run_probe, undo_all
from harness.speedups.catalog import SPEEDUPS

ENV_OFF = "HARNESS_NO_SPEEDUPS"
CACHE = cache.ROOT / "speedup-proofs"


@dataclass
class State:
    on: tuple[str, ...] = ()
    off: dict[str, str] = field(default_factory=dict)  # name -> why
    proof: str = ""  # how the set that is on was proven: 'proven', 'cached', or why there was no proof

    def summary(self) -> str:
        """Short, for a result's versions: 'all on', 'off: a, b', 'all off'."""
        if not self.off:
            return "all on"
        return "all off" if not self.on else "off: " + ", ".join(self.off)

    def line(self) -> str:
        """One line for a run's log: how many are on, and each that is off with its reason."""
        total = len(self.on) + len(self.off)
        head = f"harness: speed-ups {len(self.on)} of {total} on"
        if not self.off:
            return head
        why = "; ".join(f"{name} ({reason})" for name, reason in self.off.items())
        return f"{head}; off: {why}; results are those of the plain flow"


_STATE: State | None = None
_UNDO: Undo | None = None


def current() -> State | None:
    """This process's state, once `install` ran."""
    return _STATE


def _sources_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


def environment_key(extra: dict | None = None) -> str:
    """What the proof depends on: the libraries' versions, where ExecuTorch is imported from (a release, an
    overlay, a source tree) and its build, and the speed-ups' sources."""

    parts = {"speedups": _sources_digest(), **(extra or {})}
    for name in ("torch", "torchao", "executorch"):
        try:
            parts[name] = version(name)
        except PackageNotFoundError:
            parts[name] = "none"
    spec = importlib.util.find_spec("executorch")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        parts["executorch-path"] = str(Path(folder).resolve())
        for marker in ("version.py", "harness-overlay.json"):
            path = Path(folder) / marker
            if path.exists():
                parts[marker] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def _read_cache(key: str) -> dict | None:
    found = cache.read_json(CACHE / f"{key}.json")
    return found if isinstance(found, dict) else None


def _write_cache(key: str, verdict: dict) -> None:
    cache.write_json(CACHE / f"{key}.json", verdict)  # unwritable: the next process proves them again


def _digests(prove: Callable[[], list[str]]) -> tuple[list[str] | None, str]:
    try:
        return prove(), ""
    except Exception as e:  # noqa: BLE001 - the proof's failure is its answer
        return None, f"{type(e).__name__}: {str(e)[:160]}"


def _proven(candidates: list, prove: Callable[[], list[str]]) -> tuple[list, dict[str, str], str]:
    """(the speed-ups that change no flatbuffer, the others with why, how it was proven); nothing stays installed."""
    plain, error = _digests(prove)
    if plain is None:
        why = f"no end-to-end proof: the plain flow failed its sample ({error})"
        return [], {s.name: why for s in candidates}, why

    def same_with(group: list) -> bool:
        undo = undo_all([s.install() for s in group])
        try:
            fast, _ = _digests(prove)
        finally:
            undo()
        return fast == plain

    if same_with(candidates):
        return list(candidates), {}, "proven"
    kept = [s for s in candidates if same_with([s])]
    off = {s.name: "changes the lowered flatbuffer of the end-to-end sample" for s in candidates if s not in kept}
    if kept and not same_with(kept):
        off.update({s.name: "changes the lowered flatbuffer together with the others" for s in kept})
        kept = []
    return kept, off, "proven"


def install(prove: Callable[[], list[str]] | None = None, key_extra: dict | None = None) -> State:
    """Probe, prove (with `prove`: the sample's flatbuffer digests, under whatever is installed) and install.

    Once per process; later calls return the same state.
    """
    global _STATE, _UNDO
    if _STATE is not None:
        return _STATE
    if os.environ.get(ENV_OFF, "") not in ("", "0"):
        _STATE = State((), {s.name: f"{ENV_OFF} is set" for s in SPEEDUPS}, "off by request")
        return _STATE
    off: dict[str, str] = {}
    candidates = []
    for s in SPEEDUPS:
        why = run_probe(s.probe)
        if why:
            off[s.name] = why
        else:
            candidates.append(s)
    proof = "no end-to-end proof asked"
    if prove is not None and candidates:
        key = environment_key(key_extra)
        cached = _read_cache(key)
        names = [s.name for s in candidates]
        if cached is not None and sorted(cached.get("candidates", [])) == sorted(names):
            kept = [s for s in candidates if s.name in cached["on"]]
            off.update({n: why for n, why in cached["off"].items() if n in names})
            proof = "cached"
        else:
            kept, failed, proof = _proven(candidates, prove)
            off.update(failed)
            _write_cache(key, {"candidates": names, "on": [s.name for s in kept], "off": failed})
        candidates = kept
    _UNDO = undo_all([s.install() for s in candidates])
    order = [s.name for s in SPEEDUPS]
    _STATE = State(tuple(s.name for s in candidates), {n: off[n] for n in order if n in off}, proof)
    return _STATE


_SUSPENDED = False


def suspended_now() -> bool:
    return _SUSPENDED


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """The plain flow for a while: every speed-up that is on is undone, and installed again after. A case that
    fails with them is run again without them before the backend is blamed (`harness.run.execute`)."""
    global _UNDO, _SUSPENDED
    if _STATE is None or not _STATE.on or _UNDO is None or _SUSPENDED:
        yield
        return
    _UNDO()
    _SUSPENDED = True
    try:
        yield
    finally:
        _SUSPENDED = False
        _UNDO = undo_all([s.install() for s in SPEEDUPS if s.name in _STATE.on])


def uninstall() -> None:
    """Undo every installed speed-up (tests; a process that must fall back to the plain flow)."""
    global _STATE, _UNDO
    if _UNDO is not None:
        _UNDO()
    _STATE, _UNDO = None, None
