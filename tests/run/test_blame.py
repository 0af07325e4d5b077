"""Blame by origin: the harness's own exception is a harness_error naming its module, whatever stage ran."""

from __future__ import annotations

import json

import pytest

from harness.blame import Verdict, harness_module, harness_origin, raising_frame
from harness.results.case_result import Outcome
from harness.run import stages
from harness.run.evidence import Evidence
from harness.run.execute import failed_observation
from harness.runners.base import RunnerError
from harness.speedups.base import need


def _raised(fn) -> BaseException:
    try:
        fn()
    except BaseException as e:  # noqa: BLE001
        return e
    raise AssertionError("did not raise")


def test_an_exception_raised_in_a_harness_module_names_it():
    e = _raised(lambda: need("executorch.no_such_module"))
    assert harness_origin(e, e) == "harness.speedups.base"


def test_an_import_of_a_missing_name_is_blamed_on_the_module_that_imports_it():
    def import_missing():
        from harness.speedups import skip_retrace

        exec(compile("from torch.fx.graph_module import no_such_name", skip_retrace.__file__, "exec"), {})

    e = _raised(import_missing)
    assert isinstance(e, ImportError) and harness_origin(e, e) == "harness.speedups.skip_retrace"


def test_the_standard_library_is_skipped_to_the_frame_that_called_it():
    e = _raised(lambda: json.loads("{"))
    assert harness_origin(e, e) is None  # called from this test file: not the harness
    assert raising_frame(e.__traceback__).endswith("test_blame.py")


def test_what_torch_raises_is_not_the_harness(tmp_path):
    import torch

    e = _raised(lambda: torch.export.export(torch.nn.Linear(2, 2), (torch.zeros(3, 3),)))
    assert harness_origin(e, stages.root_cause(e)) is None
    assert "torch" in raising_frame(stages.root_cause(e).__traceback__)


def test_verdicts_and_exceptions_never_raised_are_the_backends():
    assert harness_origin(RuntimeError("built, not raised"), RuntimeError("built, not raised")) is None
    e = _raised(lambda: (_ for _ in ()).throw(RunnerError("reference model returned TOSA_ERROR")))
    assert isinstance(e, Verdict) and harness_origin(e, e) is None


def test_harness_module_names():
    import harness.run.execute as execute

    assert harness_module(execute.__file__) == "harness.run.execute"
    assert harness_module(json.__file__) is None and harness_module(None) is None


@pytest.mark.parametrize("stage", ["quantize", "lower", "run"])
def test_a_stage_failure_raised_by_the_harness_is_a_harness_error_naming_the_module(stage):
    inner = _raised(lambda: need("torch._export.utils", "_no_such_helper"))
    try:
        raise stages.StageError(stage, inner) from inner
    except stages.StageError as e:
        seen = failed_observation(e, {}, Evidence())
    assert seen.outcome is Outcome.HARNESS_ERROR and seen.stage == stage
    assert seen.reason.startswith("harness: harness.speedups.base: Missing: torch._export.utils has no _no_such_helper")
    assert seen.reason.endswith(f"(during {stage})")


def test_a_stage_failure_raised_by_torch_keeps_its_stage_outcome():
    import torch

    inner = _raised(lambda: torch.export.export(torch.nn.Linear(2, 2), (torch.zeros(3, 3),)))
    try:
        raise stages.StageError("lower", inner) from inner
    except stages.StageError as e:
        seen = failed_observation(e, {}, Evidence())
    assert seen.outcome is Outcome.LOWERING_ERROR and seen.reason.startswith("lower: ")


def test_an_error_raised_while_an_executorch_module_imports_is_one_line_and_names_torch():
    """An old tree's exir asks torch for an op overload this torch lacks, at import: not an ImportError."""
    from harness.blame import backend_load_error

    def raised(code: str, filename: str) -> BaseException:
        try:
            exec(compile(code, filename, "exec"), {})
        except AttributeError as e:
            return e
        raise AssertionError("nothing raised")

    found = backend_load_error(
        raised("raise AttributeError(\"no overload name 'Dimname'\")", "/o/executorch/exir/dialects.py")
    )
    assert found is not None and "no overload name 'Dimname'" in str(found)
    assert "does not import beside torch" in str(found)
    assert backend_load_error(raised("def f():\n    raise AttributeError('x')\nf()", "/o/harness/x.py")) is None


def test_an_errors_frames_name_the_files_functions_and_passes_of_torch_and_executorch_it_went_through():
    from harness.blame import backend_frames

    code = (
        "class ArmPass:\n"
        "    def __call__(self):\n"
        "        return self.call()\n"
        "class RewriteConvPass(ArmPass):\n"
        "    def call(self):\n"
        "        raise IndexError('tuple index out of range')\n"
    )
    namespace: dict = {}
    exec(compile(code, "/site-packages/executorch/backends/arm/_passes/arm_pass.py", "exec"), namespace)
    try:
        namespace["RewriteConvPass"]()()
    except IndexError as e:
        frames = backend_frames(e)
    assert frames == (
        "executorch/backends/arm/_passes/arm_pass.py:RewriteConvPass.call",
        "executorch/backends/arm/_passes/arm_pass.py:ArmPass.__call__[RewriteConvPass]",
    )


def test_a_module_torch_refuses_in_eager_is_the_harnesss_mistake_not_the_backends():
    """A bad value the harness hands torch (here, inputs of the wrong width) fails before anything is lowered,
    in the build stage: a harness_error, where a lowering would have been blamed for meeting it first."""
    import torch

    from harness.config import parse_descriptor

    c = parse_descriptor("conv2d_n1_ic4_oc8_g1_i6x6_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone")

    class Sized:
        inputs = (torch.zeros(1, 3, 6, 6),)  # three channels for a conv of four

    model = torch.nn.Conv2d(4, 8, 3, padding=1)
    try:
        stages.timed(stages.BUILD, {}, stages.runs_in_eager, model, ((c, Sized),))
    except stages.StageError as e:
        seen = failed_observation(e, {}, Evidence())
    assert seen.outcome is Outcome.HARNESS_ERROR and seen.stage == "build"
    assert "does not run in eager torch at n1 i6x6: RuntimeError" in seen.reason


def test_a_failure_the_plain_flow_does_not_see_is_the_speedups_not_the_backends(monkeypatch):
    """A case that is not green with speed-ups on runs again without them; what they changed is the harness's."""
    from harness.config import parse_descriptor
    from harness.expectations.classify import Observation
    from harness.run import execute
    from harness.run.settings import RunSettings
    from harness.speedups import state

    c = parse_descriptor("conv2d_n1_ic4_oc8_g1_i6x6_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone")
    wrong = Observation(Outcome.MISMATCH, "max_err 9 > 4", metrics={"max_err": 9.0, "n_over": 3})
    right = Observation(Outcome.PASS, "", metrics={"max_err": 0.1, "n_over": 0})
    monkeypatch.setattr(execute, "setup_process", lambda: None)
    monkeypatch.setattr(state, "_STATE", state.State(on=("skip_retrace",)))
    monkeypatch.setattr(state, "_UNDO", lambda: None)
    monkeypatch.setattr(state, "SPEEDUPS", ())

    monkeypatch.setattr(execute, "_observe", lambda *a: right if state.suspended_now() else wrong)
    r = execute.run_configured(c, RunSettings(0))
    assert r.outcome is Outcome.HARNESS_ERROR and r.error_type == "SpeedupChangedResult"
    assert (
        "speed-ups (skip_retrace) changed this case: with them mismatch (max_err 9 > 4); in the plain flow pass"
        in r.reason
    )

    monkeypatch.setattr(execute, "_observe", lambda *a: wrong)  # the plain flow sees it too: the backend's
    r = execute.run_configured(c, RunSettings(0))
    assert r.outcome is Outcome.MISMATCH and r.reason == "max_err 9 > 4"
