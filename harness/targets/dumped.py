"""The TOSA flatbuffer a backend dumped for its own compiler (Vela, the VGF model converter), per delegate.

A backend given a directory for its intermediate artifacts writes each
delegate's TOSA graph there as `output_<delegation tag>_<spec>.tosa` before
handing it on; that flatbuffer, not a rebuilt one, is what the reference
model runs.
"""

from __future__ import annotations

from pathlib import Path


def delegation_tag(delegate) -> str:
    for node in delegate.original_module.graph.nodes:
        tag = node.meta.get("delegation_tag")
        if tag:
            return tag
    return ""


def dumped_tosa(delegates: list, workdir: str | None, backend: str) -> list[bytes]:
    """Each delegate's dumped TOSA flatbuffer, in order; RuntimeError when there is not exactly one."""
    if workdir is None:
        raise RuntimeError(f"the {backend} lowering needs a directory for its intermediate artifacts")
    folder = Path(workdir)
    out: list[bytes] = []
    for d in delegates:
        tag = delegation_tag(d)
        found = sorted(folder.glob(f"output_{tag}_*.tosa" if tag else "output_*.tosa"))
        if len(found) != 1:
            raise RuntimeError(
                f"expected one TOSA flatbuffer for delegation tag {tag!r} in {workdir}, found {[p.name for p in found]}"
            )
        out.append(found[0].read_bytes())
    return out
