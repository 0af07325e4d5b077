"""What the command-line verbs share: exit codes and the history a verb opens."""

from __future__ import annotations

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130  # 130: the shell's code for Ctrl-C
EXIT_ENVIRONMENT = 3  # a control failed, the canary was missed, or no case ran: nothing said of the backend
EXIT_COST = 4  # --fail-on-cost: the numbers held, but what the NPU pays went up (harness.policy.cost)


def diff_exit(d, fail_on_cost: bool) -> int:
    """A diff's exit code: 1 on a numeric regression; else 4 on a cost regression when asked; else 0."""
    if d.regression:
        return EXIT_FAIL
    return EXIT_COST if fail_on_cost and d.cost_regression else EXIT_OK


def history_of(args):
    """The history database of `--db`, or None with `--no-history`."""
    from harness.history.db import History

    if getattr(args, "no_history", False):
        return None
    return History(args.db)
