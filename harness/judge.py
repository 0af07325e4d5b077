"""Judge one case's output: all references computed once, one verdict per output.

`Judge(config, tensors, model, quantized)` builds the references the scheme
needs; `judge(output)` returns the outcome, reason and metrics. The split
lets the detection tests feed the same references deliberately broken
outputs.

Quantized schemes pass when the output equals the integer-exact oracle bit
for bit, is within 1 LSB of the fake-quant model, and its SQNR against eager
fp32 clears the scheme's and data set's floor. Float schemes pass the TOSA
DOT_PRODUCT rule, and on the `exact` data set must equal the exactly-rounded
result. A degenerate reference makes the case `mistrusted`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from harness import compare, oracles
from harness.config import ConvConfig
from harness.data import FLOAT_DTYPES, CaseTensors, fan_in
from harness.lowering import QuantizedModel
from harness.model import border_mask
from harness.results import Outcome


@dataclass
class Judgement:
    outcome: Outcome
    reason: str = ""
    metrics: dict = field(default_factory=dict)


class Judge:
    def __init__(
        self,
        config: ConvConfig,
        tensors: CaseTensors,
        model: torch.nn.Module,
        quantized: QuantizedModel | None,
        acc_types: tuple[str, ...] = (),
    ):
        """`acc_types`: the accumulator the graph declares for each conv op.
        The float bound follows the least precise one (fp32 if none)."""
        self.config = config
        self.acc = min((a.lower() for a in acc_types if a.lower() in compare.FP_FORMATS),
                       key=lambda a: compare.FP_FORMATS[a][0], default="fp32")
        self.eager = oracles.eager_fp32(model, tensors.inputs)
        self.border = border_mask(config).numpy()
        self.int_ref: oracles.IntReference | None = None
        if config.is_quantized:
            if quantized is None or quantized.qparams is None or quantized.qparams.output is None:
                raise ValueError("a quantized scheme needs the quantizer's parameters for the conv")
            self.qparams = quantized.qparams
            oq = self.qparams.output
            self.fake_quant_codes = compare.quantize_output(
                oracles.fake_quant(quantized.module, tensors.inputs), oq.scale, oq.zero_point, oq.qmin, oq.qmax
            )
            self.int_ref = oracles.integer_exact(config, tensors, self.qparams)
            self.reference = self.int_ref.codes
        else:
            self.ref64, self.bound = oracles.fp64_with_bound(config, tensors)
            self.has_bias = tensors.bias is not None and bool(torch.any(tensors.bias != 0))
            self.reference = self.ref64.numpy()

    def judge(self, output: torch.Tensor) -> Judgement:
        if self.config.is_quantized:
            return self._judge_int(output)
        return self._judge_float(output)

    def _localize(self, verdict_metrics: dict, diff: np.ndarray) -> None:
        if diff.shape[2:] == self.border.shape and diff.any():
            verdict_metrics["where"] = compare.localize(diff, self.border)

    def _judge_int(self, output: torch.Tensor) -> Judgement:
        oq = self.qparams.output
        out = compare.quantize_output(output, oq.scale, oq.zero_point, oq.qmin, oq.qmax)
        exact = compare.lsb(out, self.reference, max_lsb=compare.MAX_LSB_EXACT)
        metrics = dict(exact.metrics)
        reasons = [f"vs integer-exact: {exact.reason}"] if not exact.passed else []
        if out.shape == self.reference.shape:
            self._localize(metrics, out != self.reference)
            fq = compare.lsb(out, self.fake_quant_codes, max_lsb=compare.MAX_LSB_FAKE_QUANT)
            metrics["fq_max_lsb"] = fq.metrics["max_lsb"]
            metrics["fq_n_diff"] = fq.metrics["n_diff"]
            if not fq.passed:
                reasons.append(f"vs fake-quant: {fq.reason}")
        sqnr = compare.sqnr_db(self.eager, output)
        floor = compare.sqnr_floor(self.config.scheme, self.config.dataset)
        metrics.update(sqnr_db=sqnr, sqnr_floor_db=floor)
        if sqnr is not None and sqnr < floor:
            reasons.append(f"SQNR {sqnr:.1f} dB against fp32 is below the {floor:.0f} dB floor")
        metrics["clamp_share"] = round(float(np.mean((self.reference <= oq.qmin) | (self.reference >= oq.qmax))), 4)
        metrics["rescale"] = {"bits": self.int_ref.bits, "multipliers": list(self.int_ref.multipliers[:4]),
                              "shifts": list(self.int_ref.shifts[:4])}
        if reasons:
            return Judgement(Outcome.MISMATCH, "; ".join(reasons), metrics)
        degenerate = compare.degenerate_reason(self.reference, oq.qmin, oq.qmax)
        return Judgement(Outcome.MISTRUSTED if degenerate else Outcome.PASS, degenerate, metrics)

    def _judge_float(self, output: torch.Tensor) -> Judgement:
        c = self.config
        verdict = compare.dot_product(output, self.ref64, self.bound, fan_in(c), self.has_bias, c.scheme, self.acc)
        metrics = dict(verdict.metrics)
        reasons = [verdict.reason] if not verdict.passed else []
        if tuple(output.shape) == tuple(self.ref64.shape):
            rounded = self.ref64.to(FLOAT_DTYPES[c.scheme]).double()
            inexact = output.double() != rounded
            metrics["n_inexact"] = int(inexact.sum())
            if c.dataset == "exact" and metrics["n_inexact"]:
                reasons.append(f"{metrics['n_inexact']} element(s) differ from the exactly rounded result on exact data")
            if reasons:
                self._localize(metrics, inexact.numpy() if c.dataset == "exact" else self._over_limit(output))
        if reasons:
            return Judgement(Outcome.MISMATCH, "; ".join(reasons), metrics)
        degenerate = compare.degenerate_reason(self.reference)
        return Judgement(Outcome.MISTRUSTED if degenerate else Outcome.PASS, degenerate, metrics)

    def _over_limit(self, output: torch.Tensor) -> np.ndarray:
        c = self.config
        per_element = compare.dot_product_errors(output, self.ref64, self.bound, c.scheme)
        limit = compare.dot_product_limit(fan_in(c), self.has_bias, c.scheme, self.acc)
        return np.abs(per_element) > limit
