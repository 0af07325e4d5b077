"""The command line (`python -m harness`): `main` parses and dispatches to the verbs each module of this package
adds (`cases`, `sweeps`, `history`, `bisect`, `issue`, `mutate`, `registry`, `doctor`)."""
