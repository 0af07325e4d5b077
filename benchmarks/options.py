"""The two options every benchmark that keeps a JSON takes: where to write it, and `--table` to print the table of
one written earlier (docs/generate.py builds docs/performance.md from the same `table` functions)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path


def result_parser(doc: str, default_json: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--json", default=default_json, help=f"write the figures here (default {default_json})")
    parser.add_argument("--table", metavar="JSON", help="print the markdown table of a JSON written earlier, and stop")
    return parser


def printed_table(args: argparse.Namespace, table: Callable[[str], str]) -> bool:
    """Whether `--table` was asked (and its table printed): the caller then stops."""
    if args.table:
        print(table(args.table))
    return bool(args.table)


def write_result(path: str, result: dict, table: Callable[[str], str]) -> None:
    """Write the figures to `path` and print their table, as `--table` would."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(table(path))
