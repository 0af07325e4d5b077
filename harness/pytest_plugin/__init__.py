"""The pytest plugin: one test per conv case, packed where the sweep packs, results kept across xdist workers.

Registered through the `pytest11` entry point, so that with the package
installed any pytest run has the `--harness-*` options, and

    pytest --pyargs harness.pytest_plugin.test_cases --harness-tier smoke -n auto

runs a tier from any directory. Each case stays its own test (own id, verdict,
repro line, JUnit entry); the cases of a pack (`--harness-pack`, the sweep's
packing rule) are lowered and run together on one worker when the first of
them is called (`harness.schedule.on_demand`), a packed case that is not green
is re-run alone before it is reported. Each worker appends its results to its
own part file and records each in the run history; the controller merges the
parts in selection order when the session ends and closes the run. The plugin
knows cases and results, nothing of TOSA or ExecuTorch, and selects nothing
until a test asks for `conv_case`.
"""

from __future__ import annotations

import functools
import time

import pytest

from harness.cli.common import EXIT_ENVIRONMENT
from harness.config import ConfigError, ConvConfig, parse_descriptor
from harness.pytest_plugin import durations, options, packs, recorder
from harness.results.case_result import new_run_id


def pytest_addoption(parser):
    options.add_options(parser)


def _cases(config) -> list[ConvConfig]:
    """The selected cases (computed once); a bad descriptor, tier or canary is a one-line usage error."""
    if not hasattr(config, "_harness_cases"):
        from harness.cases.selection import select
        from harness.policy.targets import check_case, check_tools, get_target

        o = config.getoption
        try:
            target = get_target(o("harness_target"))
            check_tools(target)
            if o("harness_case"):
                config._harness_cases = [parse_descriptor(d) for d in o("harness_case")]
                for c in config._harness_cases:
                    check_case(target, c)
            else:
                config._harness_cases = select(
                    o("harness_tier"),
                    o("harness_random"),
                    o("harness_seed"),
                    o("harness_filter"),
                    o("harness_shard"),
                    o("harness_target"),
                )
            if o("harness_canary"):
                from harness.faults.canaries import get

                get(o("harness_canary"))
            if o("harness_pack") < 1:
                raise ConfigError(f"invalid --harness-pack {o('harness_pack')}: must be >= 1 (1 runs every case alone)")
        except ConfigError as e:
            raise pytest.UsageError(str(e)) from None
    return config._harness_cases


def _packs(config) -> list:
    if not hasattr(config, "_harness_packs"):
        config._harness_packs = packs.packs_of(
            _cases(config), config.getoption("harness_target"), config.getoption("harness_pack")
        )
    return config._harness_packs


def _packs_together(config) -> bool:
    """Whether this process runs every case of a pack: alone, or an xdist worker fed by the pack scheduler."""
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        return bool(worker.get("harness_packed"))
    return getattr(config.option, "dist", "no") in ("no", None) or _pack_dist(config)


def _pack_dist(config) -> bool:
    """The xdist controller schedules packs as units: under `--dist load` (the default with -n) only."""
    return getattr(config.option, "dist", "no") == "load" and bool(getattr(config.option, "tx", None))


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    if config.getoption("harness_executorch") and not hasattr(config, "workerinput"):  # workers inherit the path
        from harness.cli.main import use_executorch
        from harness.overlays import OverlayError

        try:
            use_executorch(config.getoption("harness_executorch"))
        except (ConfigError, OverlayError) as e:
            raise pytest.UsageError(str(e)) from None
    if config.getoption("harness_tools") and not hasattr(config, "workerinput"):
        from harness.cli.main import use_tools
        from harness.overlays.tools import ToolError

        try:
            use_tools(config.getoption("harness_tools"))
        except (ConfigError, ToolError) as e:
            raise pytest.UsageError(str(e)) from None
    if options.given(config):
        _cases(config)  # fail fast, before collection, on a bad case, tier, target or canary
    asked = options.given(config) or config.getoption("harness_results") != options.DEFAULT_RESULTS
    if asked and not hasattr(config, "workerinput"):  # the paths a harness run writes, checked as the CLI's are
        # (only when harness options are given: a pytest run that has the plugin loaded makes no directory)
        from harness.cli.paths import check_path

        try:
            check_path("--harness-results", config.getoption("harness_results"), "file")
            if not config.getoption("harness_no_history"):
                check_path("--harness-db", config.getoption("harness_db"), "file")
        except ConfigError as e:
            raise pytest.UsageError(str(e)) from None
    worker = getattr(config, "workerinput", None)
    if config.getoption("harness_store_durations") and worker is None:  # the controller sees every report
        config.pluginmanager.register(
            durations.Recorder(config.rootpath / config.getoption("harness_store_durations")), "harness-store-durations"
        )
    config._harness_run_id = worker["harness_run_id"] if worker else new_run_id()
    config._harness_started = worker["harness_started"] if worker else time.time()


def pytest_configure_node(node):  # xdist: what each worker shares with the controller
    config = node.config
    node.workerinput["harness_run_id"] = config._harness_run_id
    node.workerinput["harness_started"] = config._harness_started
    node.workerinput["harness_packed"] = _pack_dist(config)


def _known_durations(config) -> dict[str, float] | None:
    path = config.getoption("harness_durations")
    if not path:
        return None
    try:
        return durations.load(config.rootpath / path)
    except durations.DurationsError as e:
        raise pytest.UsageError(str(e)) from None


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    known = _known_durations(config)
    if not _pack_dist(config) or (config.getoption("harness_pack") < 2 and known is None):
        return None  # xdist's own scheduler
    scopes = packs.scope_by_id(_packs(config)) if config.getoption("harness_pack") > 1 else {}
    order = None if known is None else functools.partial(durations.order_units, known=known)
    return packs.pack_scheduler(config, log, scopes, order)


def pytest_generate_tests(metafunc):
    if "conv_case" in metafunc.fixturenames:
        cases = _cases(metafunc.config)
        metafunc.parametrize("conv_case", cases, ids=[c.descriptor for c in cases])


def _case_of(item) -> ConvConfig | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("conv_case") if callspec is not None else None


def _prove(config) -> None:
    """Before the first case, once per session: the controls and the canary (harness.schedule.proof), run in
    this process. A control that fails or a canary that is missed stops the session with its own exit code,
    nothing blamed on the backend. A canary run (--harness-canary) is itself the experiment: no proof."""
    if getattr(config, "_harness_proven", False) or config.getoption("harness_canary"):
        return
    config._harness_proven = True
    from harness.schedule.proof import EnvironmentBroken, prove_here

    run = recorder.proof_runner(config)
    try:
        proof = prove_here(config.getoption("harness_target"), run)
    except EnvironmentBroken as e:
        pytest.exit(str(e), returncode=EXIT_ENVIRONMENT)
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(f"harness: {proof.line()}")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """The xdist controller collects nothing: the first worker's collection says whether cases will run."""
    if any("test_case[" in i for i in ids):
        _prove(node.config)


def pytest_collection_finish(session):
    """The packs this process runs: the selection's packs, less what -k, --lf or --sw deselected."""
    config = session.config
    selected = [c for c in map(_case_of, session.items) if c is not None]
    config._harness_selected = selected
    if selected and not hasattr(config, "workerinput"):  # a session without xdist proves itself here
        _prove(config)
    together = selected and _packs_together(config)
    config._harness_run_packs = packs.surviving(_packs(config), [c.descriptor for c in selected]) if together else []


@pytest.fixture(scope="session")
def harness_run(request):
    config = request.config
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    run = recorder.HarnessRun(
        config, worker, getattr(config, "_harness_selected", _cases(config)), getattr(config, "_harness_run_packs", [])
    )
    yield run
    run.close()


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput") or not hasattr(config, "_harness_run_id"):
        return  # workers leave merging to the controller
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or bool(session.shouldstop)
    why = ""
    try:
        line, why = recorder.finish(config, lambda: _cases(config), interrupted)
    except recorder.UsageError as e:
        line = f"harness: the run history could not be closed: {e}"
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if line and tr is not None:
        tr.write_line(line)
    if why and not interrupted:  # every case skipped or stopped before the runner: this run proves nothing
        session.exitstatus = EXIT_ENVIRONMENT
        if tr is not None:
            tr.write_line(f"harness: {why}: this run is not green (exit {EXIT_ENVIRONMENT})")
