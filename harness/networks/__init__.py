"""Real networks for `python -m harness model`, built without weights (random initialization).

Written here from their papers because torchvision's wheels do not import
beside torch 2.13 on this stack; any factory returning an `nn.Module` works
with `model` (`MODULE:FACTORY`). A factory may set two attributes on the model:
`example_input_shape`, the input `model` feeds when `--input` is not given,
and `recalibrate_batch_norm`: the network is randomly initialized, so its
batch norms' running statistics (mean 0, variance 1) are not its
activations' and `model` recomputes them on the calibration inputs first.
Without that, a deep random network's activations shrink layer by layer
until its last convs see all-zero inputs (measured on MobileNetV2: a std of
2e-9 at the last conv), and every case made of them proves nothing.
"""

from torch import nn


def init_like_torchvision(model: nn.Module) -> nn.Module:
    """The initialization torchvision gives a model built without weights (kaiming-normal convs, fan out;
    unit batch norms; small linear layers): activations keep their scale through a deep random network,
    where PyTorch's default initialization shrinks them toward zero layer by layer."""
    for m in model.modules():
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0, 0.01)
            nn.init.zeros_(m.bias)
    return model
