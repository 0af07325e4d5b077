"""What the command-line verbs share: exit codes and the history a verb opens."""

from __future__ import annotations

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130  # 130: the shell's code for Ctrl-C
EXIT_ENVIRONMENT = 3  # a control failed, the canary was missed, or no case ran: nothing said of the backend


def history_of(args):
    """The history database of `--db`, or None with `--no-history`."""
    from harness.history.db import History

    if getattr(args, "no_history", False):
        return None
    return History(args.db)
