"""The package's layers, bottom first: each package of harness (or top-level module) imports only from those
below it. The one list: `tests/test_structure.py` checks every import against it, and `docs/generate.py` prints
it into the README and docs/guide/layout.md."""

from __future__ import annotations

LAYERS: tuple[tuple[str, str], ...] = (
    ("layers", "this list: no import"),
    ("quiet", "the libraries' known noise, filtered where it arises"),
    ("cache", "where the harness keeps what it can rebuild, keyed by what it was made from"),
    ("descriptor", "the descriptor grammar and ConfigError: words, no harness import"),
    ("blame", "whose an exception is; the Verdict and BackendImportError types"),
    ("qparams", "quantization parameters read from a converted graph: neutral for the judge"),
    ("tools", "where a target's command-line tool is: on PATH or beside this Python"),
    ("policy", "schemes, targets, tolerances, limits, margins: policy as data"),
    ("overlays", "which ExecuTorch is imported: releases and source trees"),
    ("contexts", "graph contexts: every fact of one, torch reached lazily"),
    ("validation", "a config's vocabulary and the rules it must meet: torch's, the schemes', the contexts'"),
    ("config", "ConvConfig: one case, complete"),
    ("networks", "real networks built without weights, and their convs"),
    ("conv_ref", "the conv in fp64, the reference every oracle builds on"),
    ("results", "CaseResult, metrics, the results file"),
    ("faults", "canaries and mutants: what a run may inject"),
    ("expectations", "known issues, documented rejections, classification, per release"),
    ("cases", "the case space: tiers, strategies, the crossings, the networks' convs, selection, shards"),
    ("build", "the build stage: tensors and module of a case"),
    ("speedups", "patches of torch and ExecuTorch internals, each probed"),
    ("tosa", "reading TOSA flatbuffers"),
    ("targets", "the ExecuTorch side of each target"),
    ("runners", "executing a lowered program"),
    ("judging", "the oracles and rules: never the lowering, a target or ExecuTorch"),
    ("lowering", "quantize, export, lower"),
    ("run", "one case: its stages, composed; a pack; the process"),
    ("history", "the run history"),
    ("schedule", "many cases: workers, a cluster, resuming, the sweep"),
    ("repro", "a standalone script of a case"),
    ("mutation", "mutation campaigns over tiers"),
    ("bisect", "from a wrong number to its cause"),
    ("report", "summary, HTML, JUnit, diffs"),
    ("cli", "the command line"),
    ("pytest_plugin", "the pytest plugin: options, packs kept on a worker, results merged"),
    ("__main__", "python -m harness"),
)
