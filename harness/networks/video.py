"""The video ResNets of Tran et al. (2018): R3D-18 (3x3x3 convs) and R(2+1)D-18 (each split into a 1x3x3
spatial and a 3x1x1 temporal conv), as torchvision defines them, at 8 frames of 56x56 (half the native
16x112x112 on every axis, so every conv keeps its stride and padding remainders and the reference model
stays quick)."""

from __future__ import annotations

from torch import nn

from harness.networks import ready


def _bn_relu(c: int) -> list[nn.Module]:
    return [nn.BatchNorm3d(c), nn.ReLU()]


def _conv3(cin: int, cout: int, stride: int, mid: int | None) -> nn.Sequential:
    if mid is None:  # R3D: one 3x3x3 conv
        return nn.Sequential(nn.Conv3d(cin, cout, 3, stride, 1, bias=False))
    return nn.Sequential(
        nn.Conv3d(cin, mid, (1, 3, 3), (1, stride, stride), (0, 1, 1), bias=False),
        *_bn_relu(mid),
        nn.Conv3d(mid, cout, (3, 1, 1), (stride, 1, 1), (1, 0, 0), bias=False),
    )


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, split: bool):
        super().__init__()

        def mid(i: int, o: int) -> int | None:  # torchvision's (2+1)D width: as many parameters as the 3x3x3 conv
            return (i * o * 27) // (i * 9 + 3 * o) if split else None

        self.conv1 = nn.Sequential(_conv3(cin, cout, stride, mid(cin, cout)), *_bn_relu(cout))
        self.conv2 = nn.Sequential(_conv3(cout, cout, 1, mid(cout, cout)), nn.BatchNorm3d(cout))
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv3d(cin, cout, 1, stride, bias=False), nn.BatchNorm3d(cout))

    def forward(self, x):
        return nn.functional.relu(self.conv2(self.conv1(x)) + self.shortcut(x))


class VideoResNet18(nn.Module):
    def __init__(self, split: bool, num_classes: int = 400):
        super().__init__()
        if split:
            stem = [
                nn.Conv3d(3, 45, (1, 7, 7), (1, 2, 2), (0, 3, 3), bias=False),
                *_bn_relu(45),
                nn.Conv3d(45, 64, (3, 1, 1), 1, (1, 0, 0), bias=False),
                *_bn_relu(64),
            ]
        else:
            stem = [nn.Conv3d(3, 64, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False), *_bn_relu(64)]
        layers, cin = stem, 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [Block(cin, cout, stride, split), Block(cout, cout, 1, split)]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3, 4)))


def _at_8x56(model: nn.Module) -> nn.Module:
    return ready(model, (1, 3, 8, 56, 56))


def r3d_18(num_classes: int = 400) -> VideoResNet18:
    """R3D-18 (20 conv3d: a 3x7x7 stem, 3x3x3 blocks, three 1x1x1/2 projections)."""
    return _at_8x56(VideoResNet18(False, num_classes))


def r2plus1d_18(num_classes: int = 400) -> VideoResNet18:
    """R(2+1)D-18 (37 conv3d: 1xkxk spatial and kx1x1 temporal halves, three 1x1x1/2 projections)."""
    return _at_8x56(VideoResNet18(True, num_classes))
