"""Targets: what a case is lowered for and run on, as data.

A target is a compile spec, a partitioner and a quantizer (built by its
backend module under `harness.targets`, the only code that imports them from
ExecuTorch) plus the runner that executes what it lowers. Adding a target is
a row here and, for a new backend, one module under `harness.targets`.

* `tosa`: the generic TOSA lowering (TosaCompileSpec, TOSAPartitioner), run
  on the TOSA reference model.
* `ethos-u<NN>-<MACs>`: the Ethos-U lowering as a user's flow does it
  (EthosUCompileSpec, EthosUPartitioner, EthosUQuantizer, Vela). Its numeric
  check is the TOSA graph the backend hands to Vela, on the TOSA reference
  model: the Ethos-U specification makes INT results bit-exact to TOSA, so this
  needs no hardware. Vela's compile of it (placement, memory, cycle estimate)
  is recorded with the result.
* `vgf`: the ML SDK for Vulkan lowering (VgfCompileSpec, VgfPartitioner,
  VgfQuantizer); its TOSA graph on the TOSA reference model, and the model
  converter's `.vgf` of it recorded (a conversion it refuses fails the lowering).
* `vgf-emu`: the same lowering, its `.vgf` run by the ML SDK's scenario runner
  on the ML Emulation Layer for Vulkan (a CPU Vulkan driver underneath), and
  every output also compared with the TOSA reference model's on the same
  graph: a second executor. Skipped with the reason where the stack is absent.
* `ethos-u<NN>-<MACs>-fvp`: the same lowering, run on the Corstone FVP where it
  and an executor runner are installed; skipped with the reason elsewhere.

Torch-free: the command line and the pytest plugin check a `--target` value
without loading torch or ExecuTorch.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from harness.descriptor import ConfigError
from harness.policy.schemes import INT_SCHEMES, SCHEME_NAMES


@dataclass(frozen=True)
class Target:
    name: str
    backend: str  # module harness.targets.<backend>: compile spec, partitioner, quantizer
    runner: str  # harness.runners name
    schemes: tuple[str, ...]  # the schemes it lowers
    description: str
    accelerator: str = ""  # Vela's accelerator configuration (Ethos-U)
    dynamic: bool = True  # takes symbolic shapes
    control_flow: bool = True  # takes torch.cond
    tools: tuple[tuple[str, str], ...] = ()  # (executable, how to install it) the lowering runs
    cross_check: str = ""  # a second runner whose outputs the first's must agree with (harness.judging.executors)

    @property
    def family(self) -> str:
        """'tosa', or the Ethos-U generation: 'ethos-u55', 'ethos-u65', 'ethos-u85'."""
        return self.accelerator.rsplit("-", 1)[0] if self.accelerator else self.backend

    @property
    def u55_subset(self) -> bool:
        """Lowered for the TOSA U55 subset (the U65 shares it)."""
        return self.family in ("ethos-u55", "ethos-u65")


def _ethos_u(accelerator: str, fvp: bool = False) -> Target:
    generation = accelerator.split("-")[1].upper()
    if fvp:
        return Target(
            f"{accelerator}-fvp",
            "ethos_u",
            "fvp",
            INT_SCHEMES,
            f"Ethos-{generation} ({accelerator}) lowering, run on the Corstone FVP",
            accelerator,
            dynamic=False,
            control_flow=generation == "U85",
        )
    return Target(
        accelerator,
        "ethos_u",
        "tosa-ref",
        INT_SCHEMES,
        f"Ethos-{generation} ({accelerator}) lowering: its TOSA graph on the TOSA reference model, "
        "Vela's compile recorded",
        accelerator,
        dynamic=False,
        control_flow=generation == "U85",
    )


ETHOS_U_ACCELERATORS = (
    "ethos-u55-32",
    "ethos-u55-64",
    "ethos-u55-128",
    "ethos-u55-256",
    "ethos-u65-256",
    "ethos-u65-512",
    "ethos-u85-128",
    "ethos-u85-256",
    "ethos-u85-512",
    "ethos-u85-1024",
    "ethos-u85-2048",
)
# The configurations the smoke and nightly tiers run; the full tier runs every one.
MAIN_ETHOS_U = ("ethos-u55-128", "ethos-u55-256", "ethos-u65-256", "ethos-u85-256")
FVP_ACCELERATORS = ("ethos-u55-128", "ethos-u65-256", "ethos-u85-256")

VGF_SCHEMES = tuple(s for s in SCHEME_NAMES if not s.startswith("fp8"))
VGF_TOOLS = (("model-converter", "pip install -e '.[vgf]' (ai-ml-sdk-model-converter 0.11.0)"),)

TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "tosa",
            "tosa",
            "tosa-ref",
            SCHEME_NAMES,
            "the generic TOSA lowering (TosaCompileSpec, TOSAPartitioner, TOSAQuantizer) on the TOSA reference model",
        ),
        Target(
            "vgf",
            "vgf",
            "tosa-ref",
            VGF_SCHEMES,
            "the VGF lowering (VgfCompileSpec, VgfPartitioner, VgfQuantizer, the ML SDK's model converter): "
            "its TOSA graph on the TOSA reference model, the converter's .vgf recorded",
            # model-converter 0.11.0 marks the shape extension and control flow illegal: "failed to legalize
            # operation 'tosa.dim'" (any symbolic dim) and "... 'tosa.cond_if'" (torch.cond), measured on smoke
            dynamic=False,
            control_flow=False,
            tools=VGF_TOOLS,
        ),
        Target(
            "vgf-emu",
            "vgf",
            "vgf-emulation",
            VGF_SCHEMES,
            "the VGF lowering, its .vgf run by the ML SDK's scenario runner on the ML Emulation Layer for Vulkan "
            "and compared with the TOSA reference model's run of its TOSA graph",
            dynamic=False,
            control_flow=False,
            tools=VGF_TOOLS,
            cross_check="tosa-ref",
        ),
        *(_ethos_u(a) for a in ETHOS_U_ACCELERATORS),
        *(_ethos_u(a, fvp=True) for a in FVP_ACCELERATORS),
    )
}
DEFAULT_TARGET = "tosa"


def get_target(name: str) -> Target:
    """The target called `name`; ConfigError (one line) for an unknown one."""
    if name not in TARGETS:
        raise ConfigError(f"unknown target {name!r}; targets: {', '.join(TARGETS)}")
    return TARGETS[name]


def check_tools(target: Target) -> None:
    """ConfigError (one line) when a tool the target's lowering runs is neither on PATH nor beside this Python:
    without it every case would fail in the backend for a reason of this machine's, not the backend's."""
    from harness.tools import locate

    for tool, install in target.tools:
        if locate(tool) is None:
            raise ConfigError(
                f"target {target.name} needs {tool}, which is neither on PATH nor beside {sys.executable}: {install}"
            )


# The contexts with torch.cond, and how many copies of the conv their branches hold (one per branch).
CONTROL_FLOW_CONTEXTS = {"cond": 2, "cond-nested": 3}


def check_case(target: Target, c) -> None:
    """ConfigError (one line) when config `c` is not a case of `target` at all (as opposed to one the target
    refuses, which is an expected rejection): a scheme it has no profile for, dims or control flow it cannot take."""
    if c.scheme not in target.schemes:
        raise ConfigError(f"target {target.name} runs the schemes {', '.join(target.schemes)}, not {c.scheme}")
    if c.dynamic != "none" and not target.dynamic:
        raise ConfigError(f"target {target.name} takes static shapes only, not dy {c.dynamic}")
    if c.context in CONTROL_FLOW_CONTEXTS and not target.control_flow:
        raise ConfigError(f"target {target.name} has no control flow: cx {c.context} is not a case of it")
