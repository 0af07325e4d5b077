"""Every key a result's `metrics` may hold: its JSON type and what it means.

The one declaration of the metric keys: the results schema is built from it
(`harness.results.schema`), so a key a judge adds without declaring it here
fails the schema check of real sweep output.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    type: str | tuple[str, ...]  # JSON Schema type(s)
    meaning: str


_WORST = "the worst element: n, c, pos (or `index` where the output is not in the conv's layout), out, ref, ..."

METRICS: dict[str, Metric] = {
    # INT: output codes against the deciding reference (integer-exact alone, fake-quant in a context)
    "max_lsb": Metric("integer", "largest difference in output LSB"),
    "n_diff": Metric("integer", "elements that differ at all"),
    "n_over": Metric("integer", "elements beyond the rule's limit"),
    "n_total": Metric("integer", "elements compared"),
    "exact_share": Metric("number", "share of elements exactly equal to the reference"),
    "worst": Metric("object", _WORST),
    "where": Metric(
        "object",
        "mismatch locus: n_diff, border, interior, border_share, border_positions_share, "
        "channels, n_channels, of_channels",
    ),
    "fq_max_lsb": Metric("integer", "largest difference from the fake-quant model, in output LSB"),
    "fq_n_diff": Metric("integer", "elements that differ from the fake-quant model"),
    "fq_tolerance_lsb": Metric("integer", "LSB the context allows against the fake-quant model"),
    "sqnr_db": Metric(("number", "null"), "SQNR of the output against eager fp32 (null: identical)"),
    "sqnr_floor_db": Metric("number", "the scheme's SQNR floor for this data set"),
    "clamp_share": Metric("number", "share of reference codes at the output type's limits"),
    "rescale": Metric("object", "the integer-exact oracle's RESCALE: bits, first multipliers and shifts"),
    "replays": Metric(
        "object",
        "a mismatch: each registered mechanism that applies, replayed on the fake-quant "
        "model (harness.judging.replays): name -> max_lsb from its output, fits (within "
        "the case's fake-quant tolerance)",
    ),
    "qparams": Metric("object", "the quantizer's parameters of the conv under test: input, output, weight, bias"),
    # Float: the DOT_PRODUCT rule
    "max_err": Metric("number", "largest |err| in the rule's units (fp8: in units of each element's limit)"),
    "err_limit": Metric("number", "the per-element limit of |err|"),
    "sum_sq": Metric("number", "sum of err^2 over the output"),
    "sum_sq_limit": Metric("number", "the limit of sum_sq: 1.6 * ksb * T"),
    "ksb": Metric("integer", "ceil(KS / 2^((nf_acc - nf_out)/2)) + (1 if a bias is non-zero)"),
    "acc": Metric("string", "the accumulator format the bound follows"),
    "n_zero_bound_violations": Metric("integer", "elements non-zero where the bound is 0"),
    "max_abs_diff": Metric("number", "largest |out - ref|"),
    "n_inexact": Metric("integer", "elements that differ from the exactly rounded result"),
    # Either
    "attribution": Metric(
        "object",
        "where the error comes from (harness.judging.attribution): quantization (fake-quant against fp64, INT), "
        "lowering (the output against fake-quant, or fp64 for float), executor (the second against the first), "
        "each with worst, unit (lsb, rule, abs), at, sqnr_db; added_by: the stage that broke its check",
    ),
    "shape": Metric("array", "the output's shape, when it differs from the reference's"),
    "ref_shape": Metric("array", "the reference's shape, when the output's differs"),
    "sizes": Metric("array", "a dynamic-shape case at each size it ran: size, outcome, max_lsb/max_err/sqnr_db"),
    # Ethos-U: Vela's compile of the graph
    "vela": Metric(
        "object",
        "Vela's compile: graphs, npu_ops, cpu_ops, macs, cycles, npu_cycles, cycles_per_mac, "
        "inference_s, passes, sram_kib, dram_kib, on/off_chip_flash_kib, command_stream_bytes",
    ),
}


def error_ratio(rule: str, metrics: dict) -> float | None:
    """A judged case's error as a share of its own limit: <= 1 within it, > 1 beyond.

    Float rules: max_err / err_limit (the DOT_PRODUCT limit; fp8 already per
    element). INT against the fake-quant model: max_lsb / its tolerance. INT
    against the integer-exact oracle, whose limit is 0 LSB: 0 while exact,
    1 + the LSB off otherwise (its fake-quant check is a second opinion, not
    the limit). None when not judged.
    """
    if rule.startswith("dot-product") and metrics.get("err_limit"):
        return metrics["max_err"] / metrics["err_limit"]
    if rule == "int-exact" and "max_lsb" in metrics:
        return 1.0 + metrics["max_lsb"] if metrics["max_lsb"] > 0 else 0.0
    if rule == "int-fake-quant" and "max_lsb" in metrics:
        return metrics["max_lsb"] / max(metrics.get("fq_tolerance_lsb", 1), 1)
    return None
