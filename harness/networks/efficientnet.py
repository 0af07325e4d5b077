"""EfficientNet-B0 (Tan and Le, 2019): MBConv blocks with squeeze-and-excitation, 3x3 and 5x5 depthwise, swish."""

from __future__ import annotations

from torch import nn

from harness.networks import conv_bn, ready

# (expansion, kernel, stride, output channels, repeats): Table 1 of the paper (stage 2 to 8).
STAGES = (
    (1, 3, 1, 16, 1),
    (6, 3, 2, 24, 2),
    (6, 5, 2, 40, 2),
    (6, 3, 2, 80, 3),
    (6, 5, 1, 112, 3),
    (6, 5, 2, 192, 4),
    (6, 3, 1, 320, 1),
)


def _conv_bn_swish(cin: int, cout: int, kernel: int, stride: int, groups: int = 1) -> nn.Sequential:
    return conv_bn(cin, cout, kernel, stride, groups, nn.SiLU())


class MBConv(nn.Module):
    def __init__(self, cin: int, cout: int, expansion: int, kernel: int, stride: int):
        super().__init__()
        hidden = cin * expansion
        squeezed = max(1, cin // 4)  # squeeze ratio 0.25 of the block's input channels
        self.expand = _conv_bn_swish(cin, hidden, 1, 1) if expansion != 1 else nn.Identity()
        self.depthwise = _conv_bn_swish(hidden, hidden, kernel, stride, groups=hidden)
        self.se1, self.se2 = nn.Conv2d(hidden, squeezed, 1), nn.Conv2d(squeezed, hidden, 1)
        self.project = nn.Sequential(nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.depthwise(self.expand(x))
        s = y.mean((2, 3), keepdim=True)
        y = self.project(y * self.se2(nn.functional.silu(self.se1(s))).sigmoid())
        return x + y if self.residual else y


class EfficientNetB0(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        layers, cin = [_conv_bn_swish(3, 32, 3, 2)], 32
        for expansion, kernel, stride, cout, repeats in STAGES:
            for i in range(repeats):
                layers.append(MBConv(cin, cout, expansion, kernel, stride if i == 0 else 1))
                cin = cout
        layers.append(_conv_bn_swish(cin, 1280, 1, 1))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


def efficientnet_b0(num_classes: int = 1000) -> EfficientNetB0:
    """EfficientNet-B0 at 224x224 (81 convs: 16 depthwise 3x3/5x5, 32 in squeeze-excite)."""
    return ready(EfficientNetB0(num_classes), (1, 3, 224, 224))
