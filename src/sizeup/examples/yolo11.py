"""Ultralytics YOLO11 detect, classify and pose models at their five scales (n, s, m, l, x), random weights.

Built from ultralytics/cfg/models/11/yolo11.yaml, yolo11-cls.yaml and yolo11-pose.yaml and the modules they name
(C3k2, C3k, C2PSA with its PSABlock attention, the Detect head whose class branch uses depthwise 3×3 convs);
parse_model turns C3k2's c3k on for the m, l and x scales. The layer list was checked against yolo11.yaml (commit
0a2ae50b3d43, read 2026-12-05): the detect models have exactly the parameters its 'scales' comments give (2,624,080 for
n ... 56,966,176 for x); the docs' tables (YOLO11n 2.6 M ... x 56.9 M; -cls n 2.8 M; -pose n 2.9 M) count the
deployed model with BatchNorm folded into the convs. The graph is the exported one: one output tensor, NMS not
included (Ultralytics reports NMS as its own 'postprocess' time).
"""

from __future__ import annotations

import torch
from torch import nn

from sizeup.examples.yolo import DFL, SPPF, Conv, _depth, _width

# scale: (depth multiple, width multiple, max channels), yolo11.yaml / yolo11-cls.yaml / yolo11-pose.yaml
SCALES = {"n": (0.50, 0.25, 1024), "s": (0.50, 0.50, 1024), "m": (0.50, 1.00, 512),
          "l": (1.00, 1.00, 512), "x": (1.00, 1.50, 512)}


class Bottleneck(nn.Module):
    def __init__(self, c1: int, c2: int, shortcut: bool = True, e: float = 0.5) -> None:
        super().__init__()
        c = int(c2 * e)
        self.cv1 = Conv(c1, c, 3)
        self.cv2 = Conv(c, c2, 3)
        self.add = shortcut and c1 == c2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3k(nn.Module):
    """C3 with n=2 Bottlenecks (e=1.0) on one half: cv1, cv2 (1×1 to c2/2 each), concat, cv3 (1×1)."""

    def __init__(self, c1: int, c2: int, n: int = 2, shortcut: bool = True) -> None:
        super().__init__()
        c = int(c2 * 0.5)
        self.cv1, self.cv2, self.cv3 = Conv(c1, c, 1), Conv(c1, c, 1), Conv(2 * c, c2, 1)
        self.m = nn.Sequential(*(Bottleneck(c, c, shortcut, 1.0) for _ in range(n)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class C3k2(nn.Module):
    """C2f whose inner blocks are C3k (c3k) or Bottleneck(e=0.5)."""

    def __init__(self, c1: int, c2: int, n: int, c3k: bool, e: float = 0.5, shortcut: bool = True) -> None:
        super().__init__()
        self.c = int(c2 * e)
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(C3k(self.c, self.c, 2, shortcut) if c3k else Bottleneck(self.c, self.c, shortcut)
                               for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = list(self.cv1(x).chunk(2, 1))
        for block in self.m:
            y.append(block(y[-1]))
        return self.cv2(torch.cat(y, 1))


class Attention(nn.Module):
    """Ultralytics Attention: 1×1 qkv conv (key dim = head dim / 2), softmax(qᵀk·scale) over the H·W positions,
    a depthwise 3×3 positional conv on v added, 1×1 projection."""

    def __init__(self, dim: int, num_heads: int, attn_ratio: float = 0.5) -> None:
        super().__init__()
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.key_dim = int(self.head_dim * attn_ratio)
        self.scale = self.key_dim ** -0.5
        self.qkv = Conv(dim, dim + 2 * self.key_dim * num_heads, 1, act=False)
        self.proj = Conv(dim, dim, 1, act=False)
        self.pe = Conv(dim, dim, 3, 1, groups=dim, act=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        q, k, v = self.qkv(x).view(b, self.num_heads, 2 * self.key_dim + self.head_dim, h * w).split(
            [self.key_dim, self.key_dim, self.head_dim], dim=2)
        attn = ((q.transpose(-2, -1) @ k) * self.scale).softmax(dim=-1)
        x = (v @ attn.transpose(-2, -1)).view(b, c, h, w) + self.pe(v.reshape(b, c, h, w))
        return self.proj(x)


class PSABlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.attn = Attention(c, max(c // 64, 1))
        self.ffn = nn.Sequential(Conv(c, 2 * c, 1), Conv(2 * c, c, 1, act=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(x)
        return x + self.ffn(x)


class C2PSA(nn.Module):
    def __init__(self, c1: int, n: int) -> None:
        super().__init__()
        self.c = c1 // 2
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv(2 * self.c, c1, 1)
        self.m = nn.Sequential(*(PSABlock(self.c) for _ in range(n)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.cv1(x).split((self.c, self.c), dim=1)
        return self.cv2(torch.cat((a, self.m(b)), 1))


class Backbone(nn.Module):
    """yolo11.yaml layers 0-8; returns P3, P4, P5."""

    def __init__(self, scale: str) -> None:
        super().__init__()
        s = SCALES[scale]
        w = [_width(c, s) for c in (64, 128, 256, 512, 1024)]
        n, big = _depth(2, s), scale in "mlx"
        self.stem = nn.Sequential(Conv(3, w[0], 3, 2), Conv(w[0], w[1], 3, 2), C3k2(w[1], w[2], n, big, 0.25))
        self.p3 = nn.Sequential(Conv(w[2], w[2], 3, 2), C3k2(w[2], w[3], n, big, 0.25))
        self.p4 = nn.Sequential(Conv(w[3], w[3], 3, 2), C3k2(w[3], w[3], n, True))
        self.p5 = nn.Sequential(Conv(w[3], w[4], 3, 2), C3k2(w[4], w[4], n, True))
        self.widths, self.n, self.big = w, n, big

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        p3 = self.p3(self.stem(x))
        p4 = self.p4(p3)
        return p3, p4, self.p5(p4)


class Detect(nn.Module):
    """YOLO11 head: box branch as YOLOv8's, class branch (DWConv 3×3 + Conv 1×1) twice, then 1×1 to nc; pose adds a
    keypoint branch (2 3×3 Convs, 1×1 to 17·3) per level."""

    def __init__(self, ch: tuple[int, ...], nc: int = 80, keypoints: int = 0, reg_max: int = 16) -> None:
        super().__init__()
        c2, c3 = max(16, ch[0] // 4, reg_max * 4), max(ch[0], min(nc, 100))
        self.cv2 = nn.ModuleList(nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1)) for x in ch)
        self.cv3 = nn.ModuleList(nn.Sequential(nn.Sequential(Conv(x, x, 3, groups=x), Conv(x, c3, 1)),
                                               nn.Sequential(Conv(c3, c3, 3, groups=c3), Conv(c3, c3, 1)),
                                               nn.Conv2d(c3, nc, 1)) for x in ch)
        c4 = max(ch[0] // 4, keypoints)
        self.cv4 = nn.ModuleList(nn.Sequential(Conv(x, c4, 3), Conv(c4, c4, 3), nn.Conv2d(c4, keypoints, 1))
                                 for x in ch) if keypoints else None
        self.dfl, self.reg_max = DFL(reg_max), reg_max

    def forward(self, feats: list[torch.Tensor]) -> torch.Tensor:
        b = feats[0].shape[0]
        y = torch.cat([torch.cat((box(f), cls(f)), 1).view(b, -1, f.shape[2] * f.shape[3])
                       for f, box, cls in zip(feats, self.cv2, self.cv3)], 2)
        box, cls = y.split((4 * self.reg_max, y.shape[1] - 4 * self.reg_max), 1)
        anchors = torch.zeros(1, 2, y.shape[2], dtype=y.dtype, device=y.device)  # the grid, an engine constant
        lt, rb = self.dfl(box).chunk(2, 1)
        out = [(anchors - lt + anchors + rb) / 2, rb + lt, cls.sigmoid()]
        if self.cv4 is not None:
            kpt = torch.cat([k(f).view(b, -1, f.shape[2] * f.shape[3]) for f, k in zip(feats, self.cv4)], 2)
            out.append(kpt * 2.0 + kpt.sigmoid())  # keypoint decode: elementwise (x, y scaled and shifted, visibility sigmoid)
        return torch.cat(out, 1)


class YOLO11(nn.Module):
    """yolo11.yaml: backbone, SPPF, C2PSA, PAN neck of C3k2 blocks, Detect (or Pose) on P3/P4/P5."""

    def __init__(self, scale: str, nc: int = 80, keypoints: int = 0) -> None:
        super().__init__()
        self.backbone = Backbone(scale)
        w, n, big = self.backbone.widths, self.backbone.n, self.backbone.big
        self.sppf = SPPF(w[4], w[4])
        self.psa = C2PSA(w[4], n)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.td4 = C3k2(w[4] + w[3], w[3], n, big)
        self.td3 = C3k2(w[3] + w[3], w[2], n, big)
        self.down3 = Conv(w[2], w[2], 3, 2)
        self.bu4 = C3k2(w[2] + w[3], w[3], n, big)
        self.down4 = Conv(w[3], w[3], 3, 2)
        self.bu5 = C3k2(w[3] + w[4], w[4], n, True)
        self.detect = Detect((w[2], w[3], w[4]), nc, keypoints)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p3, p4, p5 = self.backbone(x)
        p5 = self.psa(self.sppf(p5))
        t4 = self.td4(torch.cat((self.up(p5), p4), 1))
        n3 = self.td3(torch.cat((self.up(t4), p3), 1))
        n4 = self.bu4(torch.cat((self.down3(n3), t4), 1))
        return self.detect([n3, n4, self.bu5(torch.cat((self.down4(n4), p5), 1))])


class YOLO11Classify(nn.Module):
    """yolo11-cls.yaml: backbone layers 0-8, C2PSA, Classify (1×1 Conv to 1280, pool, Linear, softmax)."""

    def __init__(self, scale: str, nc: int = 1000) -> None:
        super().__init__()
        self.backbone = Backbone(scale)
        c = self.backbone.widths[4]
        self.psa = C2PSA(c, self.backbone.n)
        self.conv = Conv(c, 1280, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.linear = nn.Linear(1280, nc)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.pool(self.conv(self.psa(self.backbone(x)[2]))).flatten(1)).softmax(1)


def _detect(scale: str):
    return lambda: YOLO11(scale)


def _classify(scale: str):
    return lambda: YOLO11Classify(scale)


def _pose(scale: str):
    return lambda: YOLO11(scale, nc=1, keypoints=17 * 3)


yolo11n, yolo11s, yolo11m, yolo11l, yolo11x = (_detect(s) for s in "nsmlx")
yolo11n_cls, yolo11s_cls, yolo11m_cls, yolo11l_cls, yolo11x_cls = (_classify(s) for s in "nsmlx")
yolo11n_pose, yolo11s_pose, yolo11m_pose, yolo11l_pose, yolo11x_pose = (_pose(s) for s in "nsmlx")
