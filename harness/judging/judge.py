"""Judge one case's output: all references computed once, one verdict per output.

`Judge(config, tensors, model, quantized, acc_types)` builds the references
the scheme and context need; `judge(output)` returns the outcome, the rule
that decided it, the reason and the metrics. The split lets the detection
tests feed the same references deliberately broken outputs.

* Quantized, standalone conv (`int-exact`): bit-exact against the
  integer-exact oracle, within 1 LSB of the fake-quant model.
* Quantized, in a graph context (`int-fake-quant`): within the context's
  tolerance of the fake-quant model (1 LSB for one requantization; more where
  a requantized intermediate feeds arithmetic, derived from the quantization
  parameters).
* Either: SQNR against eager fp32 above the scheme's and data set's floor.
* Float (`dot-product`, `dot-product-cast`): the TOSA DOT_PRODUCT rule for the
  declared accumulator, over the whole graph's bound (fp8: that rule on the
  conv's fp16 output plus one rounding to fp8); on the `exact` data set, where
  every partial sum is exact in the accumulator, the exactly-rounded result
  too (`-exact`).
* A degenerate reference makes the case `mistrusted`.

Judging imports neither ExecuTorch nor the lowering: its inputs are the
case's tensors and module and the quantizer's parameters (`harness.qparams`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from harness.build.data import CaseTensors, scheme_dtype
from harness.build.model import CaseModule
from harness.config import ConvConfig
from harness.conv_ref import border_mask
from harness.judging import attribution, compare, oracles, replays, requant
from harness.policy.schemes import DOT_PRODUCT_CAST_RULE, SCHEMES, sqnr_floor
from harness.policy.tolerances import MAX_LSB_EXACT
from harness.qparams import QuantizedModel
from harness.results.case_result import Outcome


@dataclass
class Expectation:
    """What an output must be, element by element, for the per-element part of the case's rule:
    |output - expected| <= limit (the SQNR floor and the DOT_PRODUCT sum of squares are not per element)."""

    expected: np.ndarray  # float64, the output's shape
    limit: np.ndarray  # float64, same shape
    rule: str  # in words


@dataclass
class Judgement:
    outcome: Outcome
    rule: str
    reason: str = ""
    metrics: dict = field(default_factory=dict)


class Judge:
    def __init__(
        self,
        config: ConvConfig,
        tensors: CaseTensors,
        model: CaseModule,
        quantized: QuantizedModel | None,
        acc_types: tuple[str, ...] = (),
    ):
        """`acc_types`: the accumulator the graph declares for each conv op.
        The float bound follows the least precise one (fp32 if none)."""
        self.config = config
        self.scheme = SCHEMES[config.scheme]
        self.model = model
        self.context = model.context
        self.acc = min(
            (a.lower() for a in acc_types if a.lower() in compare.FP_FORMATS),
            key=lambda a: compare.FP_FORMATS[a][0],
            default="fp32",
        )
        self.inputs = tensors.inputs
        self.eager = oracles.eager_fp32(model, tensors.inputs)
        self.border = border_mask(config).numpy()
        self.int_ref: oracles.IntReference | None = None
        self._expectation: Expectation | None = None
        self._quantization: dict | None = None  # the quantizer's share of the error: the same for every output
        if config.is_quantized:
            if quantized is None or quantized.output is None:
                raise ValueError("a quantized scheme needs the quantizer's output parameters")
            self.quantized = quantized
            oq = quantized.output
            self.fake_quant_out = oracles.fake_quant(quantized.module, tensors.inputs)
            self.fake_quant_codes = compare.quantize_output(
                self.fake_quant_out, oq.scale, oq.zero_point, oq.qmin, oq.qmax
            )
            self.tolerance = self.context.int_tolerance(quantized, self._drift(quantized, tensors))
            if config.context == "none" and not oracles.no_integer_form(config, quantized.qparams):
                self.int_ref = oracles.integer_exact(config, tensors, quantized.qparams)
                self.reference = self.int_ref.codes
            else:
                self.reference = self.fake_quant_codes
        else:
            self.ref64, self.bound = oracles.fp64_with_bound(model, tensors.inputs)
            self.has_bias = self.context.has_bias(tensors.bias)
            self.roundings = model.format_roundings()  # the ops after the conv, rounded in the output's format
            self.reference = self.ref64.numpy()

    @staticmethod
    def _drift(quantized: QuantizedModel, tensors: CaseTensors):
        """For a graph of several convs: k -> the most LSB conv k's output may drift from the fake-quant
        model's on this case's data (`harness.judging.requant`); None when a conv is not quantized."""
        if len(quantized.convs) < 2 or any(q is None or q.output is None for q in quantized.convs):
            return None
        stages: list = []

        def drift(last: int) -> float:
            if not stages:
                stages.extend(requant.conv_stages(quantized.module, tensors.inputs))
            return requant.chain_drift(stages, quantized.convs, last)

        return drift

    def judge(self, output: torch.Tensor) -> Judgement:
        if tuple(output.shape) != tuple(self.eager.shape):
            rule = (
                "int-exact"
                if self.int_ref is not None
                else "int-fake-quant"
                if self.config.is_quantized
                else self.scheme.rule
            )
            return Judgement(
                Outcome.MISMATCH,
                rule,
                f"output shape {list(output.shape)} differs from the reference's {list(self.eager.shape)}",
                {"shape": list(output.shape), "ref_shape": list(self.eager.shape)},
            )
        j = self._judge_int(output) if self.config.is_quantized else self._judge_float(output)
        if not self.context.conv_layout and "worst" in j.metrics:  # coordinates of a non-conv layout
            w = j.metrics["worst"]
            j.metrics["worst"] = {
                "index": [w["n"], w["c"], *w["pos"]],
                **{k: v for k, v in w.items() if k not in ("n", "c", "pos")},
            }
        return j

    def expectation(self) -> Expectation:
        """The reference and the per-element limit, in the output's units (dequantized for INT); built once: it
        depends on the references alone, and the float attribution and a second executor both ask for it."""
        if self._expectation is None:
            self._expectation = self._expect()
        return self._expectation

    def _expect(self) -> Expectation:
        if self.config.is_quantized:
            oq = self.quantized.output
            lsb = MAX_LSB_EXACT if self.int_ref is not None else self.tolerance
            expected = (self.reference.astype(np.float64) - oq.zero_point) * oq.scale
            # A code is a multiple of the scale: a hundredth of one absorbs the float rounding of a dequantize.
            limit = np.full(expected.shape, (lsb + 0.01) * oq.scale)
            against = "the integer-exact oracle" if self.int_ref is not None else "the fake-quant model"
            return Expectation(expected, limit, f"within {lsb} LSB (scale {oq.scale:.6g}) of {against}")
        ks, s = self.model.dot_product_length(), self.scheme
        if self._exact_rule():
            expected = self.ref64.to(scheme_dtype(self.config.scheme)).double().numpy()
            return Expectation(expected, np.zeros(expected.shape), "the exactly rounded result (exact data)")
        if s.rule == DOT_PRODUCT_CAST_RULE:
            limit = compare.cast_limits(
                self.ref64, self.bound, ks, self.has_bias, s.name, self.acc, s.conv_format, self.roundings
            )
        else:
            limit = compare.dot_product_abs_limits(
                self.ref64, self.bound, ks, self.has_bias, s.name, self.acc, self.roundings
            )
        return Expectation(
            self.ref64.numpy(),
            limit,
            f"the TOSA DOT_PRODUCT rule's per-element limit for {s.name} "
            f"with a {self.acc} accumulator, against fp64 (KS {ks}, "
            f"{self.roundings} further roundings)",
        )

    def _localize(self, metrics: dict, diff: np.ndarray) -> None:
        if self.context.conv_layout and diff.shape[2:] == self.border.shape and diff.any():
            metrics["where"] = compare.localize(diff, self.border)

    def _judge_int(self, output: torch.Tensor) -> Judgement:
        oq = self.quantized.output
        out = compare.quantize_output(output, oq.scale, oq.zero_point, oq.qmin, oq.qmax)
        reasons = []
        if self.int_ref is not None:
            rule = "int-exact"
            resolved = self.int_ref.for_output(out)  # a tied multiplier: the conforming choice this output made
            if resolved is not self.reference and not np.array_equal(resolved, self.reference):
                self.reference, self._expectation = resolved, None
            exact = compare.lsb(out, self.reference, max_lsb=MAX_LSB_EXACT)
            metrics = dict(exact.metrics)
            if not exact.passed:
                reasons.append(f"vs integer-exact: {exact.reason}")
        else:
            rule = "int-fake-quant"
            metrics = {}
        fq = compare.lsb(out, self.fake_quant_codes, max_lsb=self.tolerance)
        if self.int_ref is None:
            metrics.update(fq.metrics)
        if out.shape == self.reference.shape:
            self._localize(metrics, out != self.reference)
        metrics["fq_max_lsb"] = fq.metrics.get("max_lsb", 0)
        metrics["fq_n_diff"] = fq.metrics.get("n_diff", 0)
        metrics["fq_tolerance_lsb"] = self.tolerance
        if not fq.passed:
            reasons.append(f"vs fake-quant: {fq.reason}")
        sqnr = compare.sqnr_db(self.eager, output)
        saturated = compare.two_sided_saturation(self.eager)
        floor = sqnr_floor(self.config.scheme, self.config.dataset, saturated)
        metrics["sqnr_db"] = sqnr
        if floor is not None:
            metrics["sqnr_floor_db"] = floor
        if sqnr is not None and floor is not None and sqnr < floor:
            reasons.append(f"SQNR {sqnr:.1f} dB against fp32 is below the {floor:.0f} dB floor")
        metrics["clamp_share"] = round(float(np.mean((self.reference <= oq.qmin) | (self.reference >= oq.qmax))), 4)
        if self.int_ref is not None:
            ref = self.int_ref
            metrics["rescale"] = {
                "bits": ref.bits,
                "multipliers": list(ref.multipliers[:4]),
                "shifts": list(ref.shifts[:4]),
                **({"tied_channels": list(ref.tied[:8]) or "all"} if ref.tie_codes is not None else {}),
            }
        metrics["attribution"] = self._attribute_int(out, output, floor, reasons)
        if reasons:
            fitted = replays.fits(self.config, self.quantized, self.inputs, out, self.tolerance)
            if fitted:  # which registered mechanisms this wrong output is (harness.judging.replays)
                metrics["replays"] = fitted
            return Judgement(Outcome.MISMATCH, rule, "; ".join(reasons), metrics)
        degenerate = compare.degenerate_reason(self.reference, oq.qmin, oq.qmax, oq.zero_point)
        return Judgement(Outcome.MISTRUSTED if degenerate else Outcome.PASS, rule, degenerate, metrics)

    def _attribute_int(self, out: np.ndarray, output: torch.Tensor, floor: float | None, reasons: list) -> dict:
        """The error split into the quantizer's share (fake-quant against fp64) and the lowering's (the output
        against fake-quant); a failing case names which one broke its check (`harness.judging.attribution`)."""
        if tuple(self.fake_quant_out.shape) != tuple(output.shape):
            return {}
        if self._quantization is None:  # the float model in fp64 runs once, whatever outputs are judged
            self._quantization = attribution.quantization(
                oracles.fp64(self.model, self.inputs), self.fake_quant_out, self.quantized.output.scale
            )
        stages = {
            "quantization": dict(self._quantization),
            "lowering": attribution.lowering_int(out, self.fake_quant_codes, output, self.fake_quant_out),
        }
        if reasons:
            fq_sqnr = stages["quantization"]["sqnr_db"]
            quantization_ok = floor is None or fq_sqnr is None or fq_sqnr >= floor
            stages["added_by"] = attribution.added_by(stages, quantization_ok, lowering_ok=False)
        return stages

    def _judge_float(self, output: torch.Tensor) -> Judgement:
        ks = self.model.dot_product_length()
        verdict = self._dot_product_rule(output, ks)
        rule = self.scheme.rule
        metrics = dict(verdict.metrics)
        reasons = [verdict.reason] if not verdict.passed else []
        if tuple(output.shape) == tuple(self.ref64.shape):
            rounded = self.ref64.to(scheme_dtype(self.config.scheme)).double()
            inexact = output.double() != rounded
            metrics["n_inexact"] = int(inexact.sum())
            exact_rule = self._exact_rule()
            if exact_rule:
                rule += "-exact"
                if metrics["n_inexact"]:
                    reasons.append(
                        f"{metrics['n_inexact']} element(s) differ from the exactly rounded result on exact data"
                    )
            if reasons:
                self._localize(metrics, inexact.numpy() if exact_rule else self._over_limit(output, ks))
        if tuple(output.shape) == tuple(self.ref64.shape):
            metrics["attribution"] = {
                "lowering": attribution.lowering_float(output, self.ref64, self.expectation().limit)
            }
            if reasons:
                metrics["attribution"]["added_by"] = "lowering"
        if reasons:
            fitted = replays.float_fits(self.model, self.inputs, lambda ref: self._passes_against(output, ref, ks))
            if fitted:  # which registered mechanisms this wrong output is (harness.judging.replays)
                metrics["replays"] = fitted
            return Judgement(Outcome.MISMATCH, rule, "; ".join(reasons), metrics)
        degenerate = compare.degenerate_reason(self.reference)
        return Judgement(Outcome.MISTRUSTED if degenerate else Outcome.PASS, rule, degenerate, metrics)

    def _dot_product_rule(self, output: torch.Tensor, ks: int) -> compare.RuleCheck:
        s = self.scheme
        if s.rule == DOT_PRODUCT_CAST_RULE:
            return compare.dot_product_cast(
                output, self.ref64, self.bound, ks, self.has_bias, s.name, self.acc, s.conv_format, self.roundings
            )
        return compare.dot_product(output, self.ref64, self.bound, ks, self.has_bias, s.name, self.acc, self.roundings)

    def _passes_against(self, output: torch.Tensor, reference: torch.Tensor, ks: int) -> tuple[bool, float | None]:
        """The rule's verdict on `output` against another fp64 reference (a replayed mechanism's), same bound."""
        saved, self.ref64 = self.ref64, reference
        try:
            verdict = self._dot_product_rule(output, ks)
        finally:
            self.ref64 = saved
        return verdict.passed, verdict.metrics.get("max_err")

    def _exact_rule(self) -> bool:
        """Exact data, exact arithmetic, and every partial sum (an integer no
        larger than the bound) exact in the accumulator: then the output is
        the exactly rounded result, whatever the summation order."""
        if self.config.dataset != "exact" or not self.context.exact_arithmetic:
            return False
        return float(self.bound.abs().max()) <= 2.0 ** (compare.FP_FORMATS[self.acc][0] + 1)

    def _over_limit(self, output: torch.Tensor, ks: int) -> np.ndarray:
        s = self.scheme
        if s.rule == DOT_PRODUCT_CAST_RULE:
            limits = compare.cast_limits(
                self.ref64, self.bound, ks, self.has_bias, s.name, self.acc, s.conv_format, self.roundings
            )
            return np.abs(output.double().numpy() - self.ref64.numpy()) > limits
        per_element = compare.dot_product_errors(output, self.ref64, self.bound, s.name)
        return np.abs(per_element) > compare.dot_product_limit(ks, self.has_bias, s.name, self.acc, self.roundings)
