"""Keyword spotting on raw audio with 1D convs: M5 (Dai et al., 2017, "Very deep convolutional neural
networks for raw waveforms"), the network of PyTorch's Speech Commands tutorial (35 keywords, 8 kHz)."""

from __future__ import annotations

from torch import nn

from harness.networks import ready


class M5(nn.Module):
    def __init__(self, num_classes: int = 35, channels: int = 32):
        super().__init__()
        c = channels
        self.features = nn.Sequential(
            nn.Conv1d(1, c, 80, stride=16),
            nn.BatchNorm1d(c),
            nn.ReLU(),
            nn.MaxPool1d(4),
            nn.Conv1d(c, c, 3),
            nn.BatchNorm1d(c),
            nn.ReLU(),
            nn.MaxPool1d(4),
            nn.Conv1d(c, 2 * c, 3),
            nn.BatchNorm1d(2 * c),
            nn.ReLU(),
            nn.MaxPool1d(4),
            nn.Conv1d(2 * c, 2 * c, 3),
            nn.BatchNorm1d(2 * c),
            nn.ReLU(),
            nn.MaxPool1d(4),
        )
        self.fc = nn.Linear(2 * c, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).mean(2))


def m5(num_classes: int = 35) -> M5:
    """M5 on one second of 8 kHz audio (4 conv1d: an 80-tap stride-16 front end, then 3-tap convs)."""
    return ready(M5(num_classes), (1, 1, 8000), torchvision_init=False)
