"""The MLPerf Tiny reference models (Banbury et al., 2021), as the benchmark's PyTorch ports write them:
DS-CNN keyword spotting on 49x10 MFCCs, MobileNetV1 0.25x visual wake words at 96x96, ResNet-8 on 32x32
CIFAR-10 images. Keras' 'same' padding becomes PyTorch's symmetric padding that keeps the output size."""

from __future__ import annotations

from torch import nn

from harness.networks import conv_bn, ready


def _conv_bn_relu(cin: int, cout: int, kernel, stride=1, padding=0, groups: int = 1, bias: bool = True):
    return conv_bn(cin, cout, kernel, stride, groups, nn.ReLU(), padding, bias)


class DSCNN(nn.Module):
    def __init__(self, num_classes: int = 12, channels: int = 64):
        super().__init__()
        layers = [_conv_bn_relu(1, channels, (10, 4), 2, (5, 1))]
        for _ in range(4):
            layers += [
                _conv_bn_relu(channels, channels, 3, 1, 1, groups=channels),
                _conv_bn_relu(channels, channels, 1),
            ]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(channels, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


def ds_cnn(num_classes: int = 12) -> DSCNN:
    """DS-CNN (KWS) on 1x49x10 MFCCs (9 convs: a 10x4/2 front end, 4 depthwise-separable pairs)."""
    return ready(DSCNN(num_classes), (1, 1, 49, 10), torchvision_init=False)


# (output channels at width 1.0, stride) of the depthwise-separable layers: Table 1 of Howard et al. (2017).
_V1 = (
    (64, 1),
    (128, 2),
    (128, 1),
    (256, 2),
    (256, 1),
    (512, 2),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (1024, 2),
    (1024, 1),
)


class MobileNetV1(nn.Module):
    def __init__(self, width: float = 0.25, num_classes: int = 2):
        super().__init__()
        cin = int(32 * width)
        layers = [_conv_bn_relu(3, cin, 3, 2, 1, bias=False)]
        for c, stride in _V1:
            cout = int(c * width)
            layers += [
                _conv_bn_relu(cin, cin, 3, stride, 1, groups=cin, bias=False),
                _conv_bn_relu(cin, cout, 1, bias=False),
            ]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


def mobilenet_v1_025_vww(num_classes: int = 2) -> MobileNetV1:
    """MobileNetV1 0.25x (visual wake words) at 96x96 (27 convs: 13 depthwise 3x3, 4 of them stride 2)."""
    return ready(MobileNetV1(0.25, num_classes), (1, 3, 96, 96), torchvision_init=False)


class ResNet8Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(
            _conv_bn_relu(cin, cout, 3, stride, 1), nn.Conv2d(cout, cout, 3, 1, 1), nn.BatchNorm2d(cout)
        )
        self.shortcut = nn.Conv2d(cin, cout, 1, stride) if stride != 1 else nn.Identity()

    def forward(self, x):
        return nn.functional.relu(self.body(x) + self.shortcut(x))


class ResNet8(nn.Module):
    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            _conv_bn_relu(3, 16, 3, 1, 1), ResNet8Block(16, 16, 1), ResNet8Block(16, 32, 2), ResNet8Block(32, 64, 2)
        )
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


def resnet8(num_classes: int = 10) -> ResNet8:
    """ResNet-8 (image classification) at 32x32 (9 convs: 3x3 blocks, two 3x3/2 and two 1x1/2 projections)."""
    return ready(ResNet8(num_classes), (1, 3, 32, 32), torchvision_init=False)
