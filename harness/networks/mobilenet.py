"""MobileNetV2 (Sandler et al., 2018): inverted residuals with depthwise 3x3 convs and linear bottlenecks."""

from __future__ import annotations

from torch import nn

from harness.networks import conv_bn, ready

# (expansion t, output channels c, repeats n, first stride s), as in Table 2 of the paper.
_BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def divisible(v: float, divisor: int = 8) -> int:
    """Channels rounded to a multiple of 8, never below 90% of the request (the reference implementation's rule)."""
    rounded = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * v else rounded


def _conv_bn_relu6(cin: int, cout: int, kernel: int, stride: int, groups: int = 1) -> nn.Sequential:
    return conv_bn(cin, cout, kernel, stride, groups, nn.ReLU6())


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expansion: int):
        super().__init__()
        hidden = cin * expansion
        layers = [_conv_bn_relu6(cin, hidden, 1, 1)] if expansion != 1 else []
        layers += [
            _conv_bn_relu6(hidden, hidden, 3, stride, groups=hidden),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000, width: float = 1.0):
        super().__init__()
        cin = divisible(32 * width)
        last = divisible(1280 * max(1.0, width))
        layers = [_conv_bn_relu6(3, cin, 3, 2)]
        for t, c, n, s in _BLOCKS:
            cout = divisible(c * width)
            for i in range(n):
                layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        layers.append(_conv_bn_relu6(cin, last, 1, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))

    def forward(self, x):
        x = self.features(x).mean((2, 3))
        return self.classifier(x)


def mobilenet_v2(num_classes: int = 1000, width: float = 1.0) -> MobileNetV2:
    """MobileNetV2 at 224x224 (52 convs: 17 depthwise)."""
    return ready(MobileNetV2(num_classes, width), (1, 3, 224, 224))
