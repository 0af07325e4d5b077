"""MobileNetV3 (Howard et al., 2019): inverted residuals with squeeze-and-excitation, hardswish, 3x3/5x5 depthwise."""

from __future__ import annotations

from torch import nn

from harness.networks import conv_bn, ready
from harness.networks.mobilenet import divisible

# (kernel, expanded channels, output channels, squeeze-excite, activation, stride): Tables 1 and 2 of the paper.
LARGE = (
    (3, 16, 16, False, "RE", 1),
    (3, 64, 24, False, "RE", 2),
    (3, 72, 24, False, "RE", 1),
    (5, 72, 40, True, "RE", 2),
    (5, 120, 40, True, "RE", 1),
    (5, 120, 40, True, "RE", 1),
    (3, 240, 80, False, "HS", 2),
    (3, 200, 80, False, "HS", 1),
    (3, 184, 80, False, "HS", 1),
    (3, 184, 80, False, "HS", 1),
    (3, 480, 112, True, "HS", 1),
    (3, 672, 112, True, "HS", 1),
    (5, 672, 160, True, "HS", 2),
    (5, 960, 160, True, "HS", 1),
    (5, 960, 160, True, "HS", 1),
)
SMALL = (
    (3, 16, 16, True, "RE", 2),
    (3, 72, 24, False, "RE", 2),
    (3, 88, 24, False, "RE", 1),
    (5, 96, 40, True, "HS", 2),
    (5, 240, 40, True, "HS", 1),
    (5, 240, 40, True, "HS", 1),
    (5, 120, 48, True, "HS", 1),
    (5, 144, 48, True, "HS", 1),
    (5, 288, 96, True, "HS", 2),
    (5, 576, 96, True, "HS", 1),
    (5, 576, 96, True, "HS", 1),
)


def _act(kind: str) -> nn.Module:
    return nn.Hardswish() if kind == "HS" else nn.ReLU()


def _conv_bn_act(cin: int, cout: int, kernel: int, stride: int, act: str, groups: int = 1) -> nn.Sequential:
    return conv_bn(cin, cout, kernel, stride, groups, _act(act))


class SqueezeExcite(nn.Module):
    """Global pool, 1x1 conv down to a quarter (rounded to 8), ReLU, 1x1 conv up, hardsigmoid, scale."""

    def __init__(self, channels: int):
        super().__init__()
        squeezed = divisible(channels // 4)
        self.fc1, self.fc2 = nn.Conv2d(channels, squeezed, 1), nn.Conv2d(squeezed, channels, 1)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        return x * nn.functional.hardsigmoid(self.fc2(nn.functional.relu(self.fc1(s))))


class Block(nn.Module):
    def __init__(self, cin: int, kernel: int, expanded: int, cout: int, se: bool, act: str, stride: int):
        super().__init__()
        layers = [] if expanded == cin else [_conv_bn_act(cin, expanded, 1, 1, act)]
        layers.append(_conv_bn_act(expanded, expanded, kernel, stride, act, groups=expanded))
        if se:
            layers.append(SqueezeExcite(expanded))
        layers += [nn.Conv2d(expanded, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV3(nn.Module):
    def __init__(self, table, last: int, num_classes: int = 1000):
        super().__init__()
        layers, cin = [_conv_bn_act(3, 16, 3, 2, "HS")], 16
        for kernel, expanded, cout, se, act, stride in table:
            layers.append(Block(cin, kernel, expanded, cout, se, act, stride))
            cin = cout
        layers.append(_conv_bn_act(cin, 6 * cin, 1, 1, "HS"))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(6 * cin, last), nn.Hardswish(), nn.Linear(last, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


def _at_224(model: nn.Module) -> nn.Module:
    return ready(model, (1, 3, 224, 224))


def mobilenet_v3_large(num_classes: int = 1000) -> MobileNetV3:
    """MobileNetV3-Large at 224x224 (62 convs: 15 depthwise, 3x3 and 5x5; 16 in squeeze-excite)."""
    return _at_224(MobileNetV3(LARGE, 1280, num_classes))


def mobilenet_v3_small(num_classes: int = 1000) -> MobileNetV3:
    """MobileNetV3-Small at 224x224 (52 convs: 11 depthwise; 18 in squeeze-excite)."""
    return _at_224(MobileNetV3(SMALL, 1024, num_classes))
