"""Patches of torch, torchao and ExecuTorch internals that make a case cheaper and change no result.

Each module here replaces one piece of code the harness does not own. None is
installed on trust: each has a probe (`probe()`: do the names it relies on
exist, does the replacement answer as the original on a small input) and an
`install()` that returns its undo; `state.install` installs those that pass
and prove, end to end, that the lowered flatbuffers are byte-identical with
them, and says once why any other is off. The catalog (`catalog.SPEEDUPS`)
is the one list of them.
"""
