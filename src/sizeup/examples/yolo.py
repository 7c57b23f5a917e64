"""Ultralytics YOLOv8 detect and classify models at their five scales (n, s, m, l, x), random weights (needs torch).

Built after ultralytics/cfg/models/v8/yolov8.yaml and yolov8-cls.yaml: the backbone Conv / C2f / SPPF stack, the PAN
neck and the anchor-free Detect head with its DFL box decode, as the exported (ONNX / TensorRT) graph runs it: one
output tensor of boxes and class scores per anchor, NMS not included (Ultralytics reports NMS as its own
'postprocess' time, beside 'inference'). Parameter counts match the docs' table (docs/en/models/yolov8.md, read
2026-12-05: YOLOv8n 3.2 M, s 11.2 M, m 25.9 M, l 43.7 M, x 68.2 M; -cls n 2.7 M ... x 57.4 M).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from sizeup.examples.zoo import Conv as _ZooConv

class Conv(_ZooConv):
    """Conv2d (no bias) + BatchNorm2d + SiLU; act=False drops the SiLU (Ultralytics Conv(..., act=False))."""

    def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, groups: int = 1, act: bool = True) -> None:
        super().__init__(c1, c2, k, s, groups)
        if not act:
            self.act = nn.Identity()


# scale: (depth multiple, width multiple, max channels), yolov8.yaml / yolov8-cls.yaml 'scales'
DETECT_SCALES = {"n": (0.33, 0.25, 1024), "s": (0.33, 0.50, 1024), "m": (0.67, 0.75, 768),
                 "l": (1.00, 1.00, 512), "x": (1.00, 1.25, 512)}
CLASSIFY_SCALES = {"n": (0.33, 0.25, 1024), "s": (0.33, 0.50, 1024), "m": (0.67, 0.75, 1024),
                   "l": (1.00, 1.00, 1024), "x": (1.00, 1.25, 1024)}


def _width(c: int, scale: tuple[float, float, int]) -> int:
    """Ultralytics make_divisible(min(c, max_channels) * width, 8)."""
    return int(math.ceil(min(c, scale[2]) * scale[1] / 8) * 8)


def _depth(n: int, scale: tuple[float, float, int]) -> int:
    return max(round(n * scale[0]), 1) if n > 1 else n


class Bottleneck(nn.Module):
    """Two 3×3 Convs (hidden width = output width), residual add when shortcut and c1 == c2."""

    def __init__(self, c1: int, c2: int, shortcut: bool) -> None:
        super().__init__()
        self.cv1 = Conv(c1, c2, 3)
        self.cv2 = Conv(c2, c2, 3)
        self.add = shortcut and c1 == c2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """cv1 (1×1, c1→2c), split, n Bottlenecks chained on the last half, concat of (2+n)·c, cv2 (1×1)."""

    def __init__(self, c1: int, c2: int, n: int, shortcut: bool) -> None:
        super().__init__()
        self.c = c2 // 2
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, self.c, shortcut) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = list(self.cv1(x).chunk(2, 1))
        for block in self.m:
            y.append(block(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    """1×1 Conv to c1/2, three chained 5×5 max-pools, concat of four, 1×1 Conv."""

    def __init__(self, c1: int, c2: int, k: int = 5) -> None:
        super().__init__()
        c = c1 // 2
        self.cv1 = Conv(c1, c, 1)
        self.cv2 = Conv(4 * c, c2, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(self.m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class Backbone(nn.Module):
    """yolov8.yaml layers 0-8: stem Convs and four stride-2 Conv + C2f stages; returns P3, P4, P5."""

    def __init__(self, scale: tuple[float, float, int]) -> None:
        super().__init__()
        w = [_width(c, scale) for c in (64, 128, 256, 512, 1024)]
        self.stem = nn.Sequential(Conv(3, w[0], 3, 2), Conv(w[0], w[1], 3, 2), C2f(w[1], w[1], _depth(3, scale), True))
        self.p3 = nn.Sequential(Conv(w[1], w[2], 3, 2), C2f(w[2], w[2], _depth(6, scale), True))
        self.p4 = nn.Sequential(Conv(w[2], w[3], 3, 2), C2f(w[3], w[3], _depth(6, scale), True))
        self.p5 = nn.Sequential(Conv(w[3], w[4], 3, 2), C2f(w[4], w[4], _depth(3, scale), True))
        self.widths = w

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        p3 = self.p3(self.stem(x))
        p4 = self.p4(p3)
        return p3, p4, self.p5(p4)


class DFL(nn.Module):
    """Distribution focal loss decode: softmax over 16 bins, a fixed 1×1 conv (arange weights) to one distance."""

    def __init__(self, c1: int = 16) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False)
        self.c1 = c1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)).view(b, 4, a)


class Detect(nn.Module):
    """Anchor-free decoupled head: per level a box branch (2 3×3 Convs, 1×1 to 4·16) and a class branch
    (2 3×3 Convs, 1×1 to nc); DFL decode, distance-to-box against the anchor grid, sigmoid scores."""

    def __init__(self, ch: tuple[int, ...], nc: int = 80, reg_max: int = 16) -> None:
        super().__init__()
        c2, c3 = max(16, ch[0] // 4, reg_max * 4), max(ch[0], min(nc, 100))
        self.cv2 = nn.ModuleList(nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1)) for x in ch)
        self.cv3 = nn.ModuleList(nn.Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, nc, 1)) for x in ch)
        self.dfl = DFL(reg_max)
        self.reg_max = reg_max

    def forward(self, feats: list[torch.Tensor]) -> torch.Tensor:
        b = feats[0].shape[0]
        out = [torch.cat((box(f), cls(f)), 1).view(b, -1, f.shape[2] * f.shape[3])
               for f, box, cls in zip(feats, self.cv2, self.cv3)]
        y = torch.cat(out, 2)
        box, cls = y.split((4 * self.reg_max, y.shape[1] - 4 * self.reg_max), 1)
        anchors = torch.zeros(1, 2, y.shape[2], dtype=y.dtype, device=y.device)  # the grid, an engine constant
        lt, rb = self.dfl(box).chunk(2, 1)
        xy, wh = (anchors - lt + anchors + rb) / 2, rb + lt
        return torch.cat((torch.cat((xy, wh), 1), cls.sigmoid()), 1)


class YOLOv8(nn.Module):
    """yolov8.yaml: backbone, SPPF, top-down (upsample + concat + C2f) and bottom-up (stride-2 Conv + concat +
    C2f) PAN neck, Detect on P3/P4/P5."""

    def __init__(self, scale: str, nc: int = 80) -> None:
        super().__init__()
        s = DETECT_SCALES[scale]
        self.backbone = Backbone(s)
        w = self.backbone.widths
        n = _depth(3, s)
        self.sppf = SPPF(w[4], w[4])
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.td4 = C2f(w[4] + w[3], w[3], n, False)
        self.td3 = C2f(w[3] + w[2], w[2], n, False)
        self.down3 = Conv(w[2], w[2], 3, 2)
        self.bu4 = C2f(w[2] + w[3], w[3], n, False)
        self.down4 = Conv(w[3], w[3], 3, 2)
        self.bu5 = C2f(w[3] + w[4], w[4], n, False)
        self.detect = Detect((w[2], w[3], w[4]), nc)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p3, p4, p5 = self.backbone(x)
        p5 = self.sppf(p5)
        t4 = self.td4(torch.cat((self.up(p5), p4), 1))
        n3 = self.td3(torch.cat((self.up(t4), p3), 1))
        n4 = self.bu4(torch.cat((self.down3(n3), t4), 1))
        n5 = self.bu5(torch.cat((self.down4(n4), p5), 1))
        return self.detect([n3, n4, n5])


class YOLOv8Classify(nn.Module):
    """yolov8-cls.yaml: the detect backbone's layers 0-8 and the Classify head (1×1 Conv to 1280, global pool,
    Linear to 1000 classes, softmax at inference)."""

    def __init__(self, scale: str, nc: int = 1000) -> None:
        super().__init__()
        s = CLASSIFY_SCALES[scale]
        self.backbone = Backbone(s)
        self.conv = Conv(self.backbone.widths[4], 1280, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.linear = nn.Linear(1280, nc)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.pool(self.conv(self.backbone(x)[2])).flatten(1)).softmax(1)


def yolov8n() -> YOLOv8:
    return YOLOv8("n")


def yolov8s() -> YOLOv8:
    return YOLOv8("s")


def yolov8m() -> YOLOv8:
    return YOLOv8("m")


def yolov8l() -> YOLOv8:
    return YOLOv8("l")


def yolov8x() -> YOLOv8:
    return YOLOv8("x")


def yolov8n_cls() -> YOLOv8Classify:
    return YOLOv8Classify("n")


def yolov8s_cls() -> YOLOv8Classify:
    return YOLOv8Classify("s")


def yolov8m_cls() -> YOLOv8Classify:
    return YOLOv8Classify("m")


def yolov8l_cls() -> YOLOv8Classify:
    return YOLOv8Classify("l")


def yolov8x_cls() -> YOLOv8Classify:
    return YOLOv8Classify("x")
