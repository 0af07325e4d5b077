"""The command line (`python -m harness`): `main` parses and dispatches to the verbs of `cases`, `sweeps` and `history`."""
