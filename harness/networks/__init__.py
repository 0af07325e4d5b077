"""Real networks for `python -m harness network`, built without weights (random initialization).

Written here from their papers because torchvision's wheels do not import
beside torch 2.13 on this stack; any factory returning an `nn.Module` works
with `network` (`MODULE:FACTORY`). A factory may set two attributes on the model:
`example_input_shape`, the input `network` feeds when `--input` is not given,
and `recalibrate_batch_norm`: the network is randomly initialized, so its
batch norms' running statistics (mean 0, variance 1) are not its
activations' and `network` recomputes them on the calibration inputs first.
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


def conv_bn(
    cin: int,
    cout: int,
    kernel,
    stride=1,
    groups: int = 1,
    act: nn.Module | None = None,
    padding=None,
    bias: bool = False,
) -> nn.Sequential:
    """A 2D conv (padding keeping the size at stride 1 unless given), its batch norm and an activation (or none)."""
    if padding is None:
        padding = (kernel - 1) // 2
    layers = [nn.Conv2d(cin, cout, kernel, stride, padding, groups=groups, bias=bias), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, act) if act is not None else nn.Sequential(*layers)


def ready(
    model: nn.Module, input_shape: tuple[int, ...], *, torchvision_init: bool = True, batch_norm: bool = True
) -> nn.Module:
    """A factory's network as `network` takes it: initialized like torchvision's (or PyTorch's default), its
    example input shape, and whether its batch norms are recalibrated first (it has some)."""
    if torchvision_init:
        init_like_torchvision(model)
    if batch_norm:
        model.recalibrate_batch_norm = True
    model.example_input_shape = input_shape
    return model
