"""Command line: `python -m harness <verb>`.

Exit status: 0 when every case is green (for `diff` and `nightly`: no
regression), 1 when not, 2 for bad input: a bad descriptor, sweep, option,
run id, results file or database, an unwritable path, named in one line on
stderr; 3 when the run proved its environment broken (a control case failed, the canary was missed) or
ran no case at all, in one line, nothing blamed on the backend; 130 when interrupted (Ctrl-C), in one line,
every finished case kept.
"""

from __future__ import annotations

import argparse
import sys

from harness.blame import BackendImportError, backend_import_error, backend_load_error
from harness.cli import bisect, cases, doctor, history, issue, mutate, registry, sweeps
from harness.cli.common import EXIT_ENVIRONMENT, EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE  # noqa: F401 - the exit codes, re-exported
from harness.cli.paths import check_writes
from harness.config import ConfigError
from harness.history.db import HistoryError
from harness.mutation.journal import JournalError
from harness.overlays import OverlayError
from harness.overlays.tools import ToolError
from harness.results.store import ResultsFileError
from harness.schedule.proof import EnvironmentBroken

VERBS = (
    "list",
    "run",
    "sweep",
    "canaries",
    "runs",
    "import",
    "merge",
    "diff",
    "report",
    "nightly",
    "bisect",
    "shrink",
    "repro",
    "issue",
    "network",
    "mutate",
    "doctor",
    "registry",
)
RENAMED = {"model": "network"}  # verbs' names before 2026-12, still read (not listed) so existing scripts run
MODULES = (cases, sweeps, history, bisect, issue, mutate, registry, doctor)  # each adds its verbs (`add_parsers`)


def parser() -> tuple[argparse.ArgumentParser, dict]:
    """The command line's parser, and each verb's command."""
    p = argparse.ArgumentParser(prog="python -m harness", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="verb", required=True, metavar="{" + ",".join(VERBS) + "}")
    commands: dict = {}
    for module in MODULES:
        commands.update(module.add_parsers(sub))
    return p, commands


def use_executorch(spec: str) -> None:
    """Build the overlay `--executorch` names and put it first on the import path (this process and its workers)."""
    from harness.expectations.commits import named_commits
    from harness.overlays import activate, marker, origin_line, resolve

    overlay = resolve(spec, commits=named_commits())
    activate(overlay)
    if overlay.path is not None:
        print(
            f"harness: executorch {overlay.label} ({overlay.kind}"
            + (f", built in {overlay.seconds:.1f} s" if not overlay.reused else "")
            + ")",
            file=sys.stderr,
        )
        origin = origin_line(marker())
        if origin:
            print(f"harness: {origin}", file=sys.stderr)


def use_tools(specs: list[str]) -> None:
    """Install (once) and put first on the import path and PATH the tool versions `--tools` names."""
    from harness.overlays import tools

    wanted = tools.parse(specs)
    overlays = [tools.install(name, version) for name, version in wanted]
    tools.check_not_imported(overlays)
    tools.activate(overlays)
    for o in overlays:
        how = "installed" if o.path is None else "reused" if o.reused else f"installed in {o.seconds:.1f} s"
        print(f"harness: {o.name} {o.version} ({how})", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    p, commands = parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in RENAMED:
        argv[0] = RENAMED[argv[0]]
    args = p.parse_args(argv)
    try:
        check_writes(args.verb, args)  # before any work: an unwritable path is one line, not a traceback later
        if getattr(args, "affected_by", ""):
            from harness.cli.sweeps import choose_affected

            choose_affected(args)  # on the installed ExecuTorch, before the change's end is put on the path
        if getattr(args, "executorch", ""):
            use_executorch(args.executorch)
        if getattr(args, "tools", []):
            use_tools(args.tools)  # after the ExecuTorch: 'pinned' reads the pins of the one in use
        return commands[args.verb](args)
    except KeyboardInterrupt:  # Ctrl-C at any moment: each finished case is already on disk and in the history
        print(f"\ninterrupted: python -m harness {args.verb} stopped (Ctrl-C); what finished is kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (
        ConfigError,
        ResultsFileError,
        HistoryError,
        JournalError,
        BackendImportError,
        OverlayError,
        ToolError,
    ) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except EnvironmentBroken as e:  # a control failed or the canary was missed: the harness or this machine
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    except BrokenPipeError:  # `python -m harness list | head`
        return EXIT_OK
    except ImportError as e:  # an ExecuTorch (an overlay, a source tree) the harness cannot import: one line
        found = backend_import_error(e)
        if found is None:
            raise
        print(f"error: {found}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - raised while importing an ExecuTorch (an old tree): one line
        found = backend_load_error(e)
        if found is None:
            raise
        print(f"error: {found}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
