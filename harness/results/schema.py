"""The JSON Schema of one results line, built from the declarations it checks.

`harness/results/schema.json` is this schema written out, for tools outside
the harness (regenerate it with `python -m harness.results.schema`; a test
keeps the file in step). Lines carry `schema_version`; readers accept the
previous version too (`harness.results.store`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.policy.schemes import DECIDING_RULES
from harness.policy.targets import TARGETS
from harness.results.case_result import SCHEMA_VERSION, CaseResult, Outcome
from harness.results.metrics import METRICS
from harness.results.stages import HARNESS, LEGACY, STAGES

SCHEMA_FILE = Path(__file__).with_name("schema.json")
_STRING = {"type": "string"}
_OUTCOMES = [o.value for o in Outcome]
OPTIONAL = (
    "data_file",
    "output_sha256",
    "packed",
    "error_frames",
)  # added within version 2: lines written before lack them


def results_schema() -> dict:
    properties = {
        "schema_version": {"const": SCHEMA_VERSION},
        "descriptor": {"type": "string", "pattern": "^t?conv[123]d(_[a-z0-9x-]+)+$"},
        "seed": {"type": "integer"},
        "outcome": {"enum": _OUTCOMES},
        "reason": _STRING,
        "target": {"enum": list(TARGETS)},
        "runner": _STRING,
        "run_id": _STRING,
        "actual_outcome": {"enum": _OUTCOMES},
        "rule": {"enum": ["", *DECIDING_RULES]},
        "rejection": _STRING,
        "issue": _STRING,
        "stage": {"enum": ["", *STAGES, *LEGACY, HARNESS]},
        "error_type": _STRING,
        "error_frames": {"type": ["array", "null"], "items": _STRING},
        "stale": _STRING,
        "canary": _STRING,
        "data_file": _STRING,
        "metrics": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                k: {"type": list(m.type) if isinstance(m.type, tuple) else m.type, "description": m.meaning}
                for k, m in METRICS.items()
            },
        },
        "tosa_ops": {"type": "array", "items": _STRING},
        "conv_ops": {"type": "array", "items": _STRING},
        "timings_s": {"type": "object", "additionalProperties": {"type": "number"}},
        "versions": {"type": "object", "additionalProperties": _STRING},
        "output_sha256": {"type": "string", "pattern": "^([0-9a-f]{64})?$"},
        "packed": {"type": "integer", "minimum": 0},
        "artifacts": {"type": ["string", "null"]},
    }
    missing = set(CaseResult.__dataclass_fields__) ^ set(properties)
    if missing:  # the schema and the dataclass must describe the same line
        raise AssertionError(f"results schema and CaseResult disagree on {sorted(missing)}")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://conv-harness/results-line/v{SCHEMA_VERSION}.json",
        "title": "One conv case's result: a line of a conv-harness results file",
        "type": "object",
        "required": [k for k in properties if k not in OPTIONAL],
        "additionalProperties": False,
        "properties": properties,
    }


def schema_text() -> str:
    return json.dumps(results_schema(), indent=2) + "\n"


if __name__ == "__main__":
    SCHEMA_FILE.write_text(schema_text())
    sys.stdout.write(f"wrote {SCHEMA_FILE}\n")
