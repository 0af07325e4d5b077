"""A standalone repro of a case: a script needing only torch, ExecuTorch and numpy, for an upstream report."""
