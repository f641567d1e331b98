#!/usr/bin/env python3
"""Exports real CNNs from PyTorch to ONNX for benchmarks and the layout
pass: ResNet-18, ResNet-50, ResNeXt-50 (32x4d) and MobileNetV2 as
torchvision defines them,
written out here (Debian's python3-torch has no torchvision), with random
weights and batch-norm statistics gathered on random images — nothing is
downloaded.
Usage: export_torch_models.py OUTDIR [--batch N] [resnet18|resnet50|resnext50|mobilenet_v2 ...]
(--batch: a static batch, as the layout pass needs; default a symbolic N)"""
import sys

import torch
import torch.nn as nn


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class Bottleneck(nn.Module):
    """groups > 1: ResNeXt's block, the 3x3 conv grouped (32x4d: 32 groups, 4 channels each in the
    first stage), its width planes * groups * base_width / 64."""
    expansion = 4
    groups, base_width = 1, 64

    def __init__(self, cin, planes, stride=1):
        super().__init__()
        cout = planes * 4
        width = planes * self.groups * self.base_width // 64
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, groups=self.groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class ResNeXtBottleneck(Bottleneck):
    groups, base_width = 32, 4


class ResNet(nn.Module):
    def __init__(self, block, layers, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for i, n in enumerate(layers):
            width = 64 * 2 ** i
            for j in range(n):
                blocks.append(block(cin, width, 2 if (j == 0 and i > 0) else 1))
                cin = width * block.expansion
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, 3x3 depthwise, 1x1 project (linear)."""

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
                   nn.ReLU6(), nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        # expansion t, channels c, repeats n, first stride s (torchvision's table)
        settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                    (6, 320, 1, 1)]
        layers, cin = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()], 32
        for t, c, n, s in settings:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, classes)
        # torchvision's initialisation (the export then gathers batch statistics, calibrate_batch_norm:
        # with untrained running statistics this network's activations die out and its logits come
        # out as the fc bias alone, which would make the output check vacuous)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)

    def forward(self, x):
        x = self.features(x)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def calibrate_batch_norm(model, batches=4):
    """Running means and variances from a few random batches (cumulative averages), as training
    would leave them, so that every layer of the exported model sees activations of unit scale."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(8, 3, 224, 224))
    return model.eval()


MODELS = {
    "resnet18": lambda: ResNet(BasicBlock, [2, 2, 2, 2]),
    "resnet50": lambda: ResNet(Bottleneck, [3, 4, 6, 3]),
    "resnext50": lambda: ResNet(ResNeXtBottleneck, [3, 4, 6, 3]),
    "mobilenet_v2": MobileNetV2,
}

if __name__ == "__main__":
    args = sys.argv[1:]
    batch = None   # None: a symbolic batch dim N
    if "--batch" in args:
        i = args.index("--batch")
        batch = int(args[i + 1])
        del args[i:i + 2]
    out = args[0]
    torch.manual_seed(0)
    for name in args[1:] or ["resnet18"]:
        model = calibrate_batch_norm(MODELS[name]())
        x = torch.randn(batch or 1, 3, 224, 224)
        suffix = f"-b{batch}" if batch else ""
        torch.onnx.export(model, x, f"{out}/{name}{suffix}.onnx", opset_version=13, input_names=["image"],
                          output_names=["logits"],
                          dynamic_axes=None if batch else {"image": {0: "N"}, "logits": {0: "N"}})
        print(f"wrote {out}/{name}{suffix}.onnx")
