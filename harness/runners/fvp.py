"""Run a lowered Ethos-U program on the Arm Corstone FVP, where it is installed.

The program is serialized to a `.pte`, its inputs written as raw bytes, and
a semihosting executor runner (an ELF built from ExecuTorch's
`examples/arm/executor_runner` for the board) runs it on the FVP of the
target's generation: Corstone-300 with an Ethos-U55 or U65, Corstone-320 with
an Ethos-U85, the MAC count of the target's configuration. The runner writes
each output to `out-<i>.bin`, read back in the program's output dtype and shape.

Where they are found (docs/guide/ethos-u.md):

* the FVP binaries on PATH, or in $HARNESS_FVP_DIR;
* the executor runner ELFs in $HARNESS_FVP_ELF_CORSTONE300 and
  $HARNESS_FVP_ELF_CORSTONE320.

Without them every case of an FVP target is `skipped`, with the reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from harness.policy.targets import get_target
from harness.runners.base import Availability, RunnerError

TIMEOUT_S = 600  # the FVP's own --timelimit; the process gets a minute more
CMD_LINE_LIMIT = 256  # the FVP truncates a longer semihosting command line


@dataclass(frozen=True)
class Board:
    fvp: str  # the FVP binary
    prefix: str  # the configuration path of the subsystem
    elf_variable: str  # where the executor runner ELF is named


BOARDS = {
    "ethos-u55": Board("FVP_Corstone_SSE-300_Ethos-U55", "", "HARNESS_FVP_ELF_CORSTONE300"),
    "ethos-u65": Board("FVP_Corstone_SSE-300_Ethos-U65", "", "HARNESS_FVP_ELF_CORSTONE300"),
    "ethos-u85": Board("FVP_Corstone_SSE-320", "mps4_board.subsystem.", "HARNESS_FVP_ELF_CORSTONE320"),
}


def board_of(family: str) -> Board:
    if family not in BOARDS:
        raise RunnerError(f"no Corstone FVP runs an {family}")
    return BOARDS[family]


def fvp_binary(board: Board) -> str | None:
    folder = os.environ.get("HARNESS_FVP_DIR")
    if folder and (Path(folder) / board.fvp).is_file():
        return str(Path(folder) / board.fvp)
    return shutil.which(board.fvp)


def command(
    board: Board, fvp: str, num_macs: int, elf: str, workdir: str, n_inputs: int, timeout: int = TIMEOUT_S
) -> list[str]:
    """The FVP command line: headless, UART to stdout, semihosting in `workdir`, the runner's arguments."""
    cmd_line = "executor_runner -m program.pte -o out" + "".join(f" -i i{k}.bin" for k in range(n_inputs))
    if len(cmd_line) > CMD_LINE_LIMIT:
        raise RunnerError(f"semihosting command line of {len(cmd_line)} characters: the FVP keeps {CMD_LINE_LIMIT}")
    main = "mps4_board" if board.prefix else "mps3_board"
    settings = [
        f"{board.prefix}ethosu.num_macs={num_macs}",
        f"{main}.visualisation.disable-visualisation=1",
        f"{main}.telnetterminal0.start_telnet=0",
        f"{main}.uart0.out_file='-'",
        f"{main}.uart0.shutdown_on_eot=1",
        f"{board.prefix}cpu0.semihosting-enable=1",
        f"{board.prefix}cpu0.semihosting-stack_base=0",
        f"{board.prefix}cpu0.semihosting-heap_limit=0",
        f"{board.prefix}cpu0.semihosting-cwd={workdir}",
        f"{board.prefix}ethosu.extra_args='--fast'",
        f"{board.prefix}cpu0.semihosting-cmd_line='{cmd_line}'",
    ]
    if board.prefix:
        settings.insert(1, "vis_hdlcd.disable_visualisation=1")
    return [fvp, *[arg for s in settings for arg in ("-C", s)], "-a", elf, "--timelimit", str(timeout)]


_PROBLEM = re.compile(r"(^[EF][: ].*$)|(^.*Hard fault.*$)|(^.*Assertion.*$)", re.MULTILINE)


def problems(log: str) -> list[str]:
    """The runner's error, fault and assertion lines in the FVP's output."""
    return [m.group(0).strip() for m in _PROBLEM.finditer(log)]


def read_outputs(workdir: str, outputs: list[tuple[torch.dtype, tuple[int, ...]]]) -> list[torch.Tensor]:
    """`out-<i>.bin` as tensors of the given dtypes and shapes; RunnerError on a missing or short file."""
    tensors = []
    for i, (dtype, shape) in enumerate(outputs):
        path = Path(workdir) / f"out-{i}.bin"
        if not path.is_file():
            raise RunnerError(f"the executor runner wrote no output {i} ({path.name})")
        raw = path.read_bytes()
        expected = int(np.prod(shape)) * torch.empty((), dtype=dtype).element_size()
        if len(raw) != expected:
            raise RunnerError(f"output {i} has {len(raw)} bytes, expected {expected} for {dtype} {list(shape)}")
        tensors.append(torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape).clone())
    return tensors


class FvpRunner:
    """The Corstone FVP with a semihosting executor runner."""

    name = "fvp"

    def _board_and_tools(self, family: str) -> tuple[Board, str | None, str | None]:
        board = board_of(family)
        elf = os.environ.get(board.elf_variable)
        return board, fvp_binary(board), elf if elf and Path(elf).is_file() else None

    def available(self, family: str) -> Availability:
        board, fvp, elf = self._board_and_tools(family)
        if fvp is None:
            return Availability(
                False,
                f"{board.fvp} not found on PATH or in $HARNESS_FVP_DIR (Arm's Corstone FVP, "
                "a separate download: see docs/guide/ethos-u.md)",
            )
        if elf is None:
            return Availability(
                False,
                f"no executor runner ELF in ${board.elf_variable} (build "
                "examples/arm/executor_runner for the board with semihosting: see docs/guide/ethos-u.md)",
            )
        return Availability(True)

    def run(self, artifact, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
        target = get_target(artifact.target)
        board, fvp, elf = self._board_and_tools(target.family)
        if fvp is None or elf is None:
            raise RunnerError(self.available(target.family).reason)
        program = artifact.program.to_executorch()
        outputs = [
            (n.meta["val"].dtype, tuple(n.meta["val"].shape))
            for n in program.exported_program().graph_module.graph.output_node().args[0]
        ]
        with tempfile.TemporaryDirectory(prefix="harness-fvp-") as workdir:
            (Path(workdir) / "program.pte").write_bytes(program.buffer)
            for k, x in enumerate(inputs):
                (Path(workdir) / f"i{k}.bin").write_bytes(x.contiguous().numpy().tobytes())
            num_macs = int(target.accelerator.rsplit("-", 1)[1])
            cmd = command(board, fvp, num_macs, elf, workdir, len(inputs))
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S + 60)
            except subprocess.TimeoutExpired:
                raise RunnerError(f"timeout: the FVP ran past {TIMEOUT_S + 60} s") from None
            found = problems(done.stdout)
            if found or done.returncode:
                raise RunnerError(
                    f"the FVP run failed (exit {done.returncode}): {' | '.join(found[:3]) or done.stderr[-300:]}"
                )
            return read_outputs(workdir, outputs)
