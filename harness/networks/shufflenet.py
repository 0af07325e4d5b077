"""ShuffleNetV2 1.0x (Ma et al., 2018) and SqueezeNet 1.1 (Iandola et al., 2016): the two small ImageNet nets
built from 1x1 convs around cheap spatial ones (depthwise 3x3 with a channel shuffle; fire modules)."""

from __future__ import annotations

import torch
from torch import nn

from harness.networks import conv_bn, ready


def _conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, relu: bool = True):
    return conv_bn(cin, cout, kernel, stride, groups, nn.ReLU() if relu else None)


def _shuffle(x: torch.Tensor, groups: int = 2) -> torch.Tensor:
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)


class ShuffleUnit(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        branch = cout // 2
        self.stride = stride
        if stride == 2:  # both halves see the whole input
            self.branch1 = nn.Sequential(_conv_bn(cin, cin, 3, 2, groups=cin, relu=False), _conv_bn(cin, branch, 1))
        into = cin if stride == 2 else branch
        self.branch2 = nn.Sequential(
            _conv_bn(into, branch, 1),
            _conv_bn(branch, branch, 3, stride, groups=branch, relu=False),
            _conv_bn(branch, branch, 1),
        )

    def forward(self, x):
        if self.stride == 2:
            out = torch.cat((self.branch1(x), self.branch2(x)), 1)
        else:
            a, b = x.chunk(2, dim=1)
            out = torch.cat((a, self.branch2(b)), 1)
        return _shuffle(out)


class ShuffleNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000, channels=(24, 116, 232, 464, 1024), repeats=(4, 8, 4)):
        super().__init__()
        layers, cin = [_conv_bn(3, channels[0], 3, 2), nn.MaxPool2d(3, 2, 1)], channels[0]
        for cout, n in zip(channels[1:4], repeats):
            layers += [ShuffleUnit(cin, cout, 2)] + [ShuffleUnit(cout, cout, 1) for _ in range(n - 1)]
            cin = cout
        layers.append(_conv_bn(cin, channels[4], 1))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(channels[4], num_classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


def shufflenet_v2(num_classes: int = 1000) -> ShuffleNetV2:
    """ShuffleNetV2 1.0x at 224x224 (56 convs: 19 depthwise 3x3, 13 of them stride 1)."""
    return ready(ShuffleNetV2(num_classes), (1, 3, 224, 224))


class Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, expand: int):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.expand1, self.expand3 = nn.Conv2d(squeeze, expand, 1), nn.Conv2d(squeeze, expand, 3, padding=1)

    def forward(self, x):
        s = nn.functional.relu(self.squeeze(x))
        return torch.cat((nn.functional.relu(self.expand1(s)), nn.functional.relu(self.expand3(s))), 1)


class SqueezeNet11(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        pool = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, 2),
            nn.ReLU(),
            pool,
            Fire(64, 16, 64),
            Fire(128, 16, 64),
            pool,
            Fire(128, 32, 128),
            Fire(256, 32, 128),
            pool,
            Fire(256, 48, 192),
            Fire(384, 48, 192),
            Fire(384, 64, 256),
            Fire(512, 64, 256),
        )
        self.classifier = nn.Conv2d(512, num_classes, 1)

    def forward(self, x):
        return nn.functional.relu(self.classifier(self.features(x))).mean((2, 3))


def squeezenet1_1(num_classes: int = 1000) -> SqueezeNet11:
    """SqueezeNet 1.1 at 224x224 (26 convs, all with bias: an unpadded 3x3/2 stem, fire modules, a 1x1 classifier)."""
    return ready(SqueezeNet11(num_classes), (1, 3, 224, 224), torchvision_init=False, batch_norm=False)
