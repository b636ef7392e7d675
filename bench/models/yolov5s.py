"""YOLOv5s, the ultralytics v6.0 architecture (width 0.50, depth 0.33), as a plain PyTorch module.

Written from the architecture description so the benchmark models need no download: Conv (Conv2d +
BatchNorm + SiLU), C3 blocks with bottlenecks, SPPF with max-pool 5, a PANet neck with nearest 2x
upsampling and concatenation, and the Detect head with its grid/anchor decode. The output is the
inference tensor (batch, 25200, 85) for a 640x640 image: xywh in pixels, objectness, 80 classes.
"""

import math

import torch
from torch import nn

WIDTH_MULTIPLE = 0.50
DEPTH_MULTIPLE = 0.33
NUM_CLASSES = 80
# Anchor (width, height) pairs in pixels for the P3/8, P4/16 and P5/32 outputs.
ANCHORS = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119), (116, 90, 156, 198, 373, 326))
STRIDES = (8, 16, 32)


def width(channels):
    """Channels of the full model scaled by the width multiple, rounded up to a multiple of 8."""
    return int(math.ceil(channels * WIDTH_MULTIPLE / 8) * 8)


def depth(repeats):
    return max(round(repeats * DEPTH_MULTIPLE), 1)


class Conv(nn.Module):
    def __init__(self, c_in, c_out, kernel=1, stride=1, padding=None):
        super().__init__()
        self.conv = nn.Conv2d(
            c_in, c_out, kernel, stride, kernel // 2 if padding is None else padding, bias=False
        )
        self.bn = nn.BatchNorm2d(c_out, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c_in, c_out, shortcut=True, expansion=0.5):
        super().__init__()
        hidden = int(c_out * expansion)
        self.cv1 = Conv(c_in, hidden, 1, 1)
        self.cv2 = Conv(hidden, c_out, 3, 1)
        self.add = shortcut and c_in == c_out

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    """CSP bottleneck with three convolutions."""

    def __init__(self, c_in, c_out, repeats=1, shortcut=True):
        super().__init__()
        hidden = c_out // 2
        self.cv1 = Conv(c_in, hidden, 1, 1)
        self.cv2 = Conv(c_in, hidden, 1, 1)
        self.cv3 = Conv(2 * hidden, c_out, 1)
        self.m = nn.Sequential(*(Bottleneck(hidden, hidden, shortcut, expansion=1.0) for _ in range(repeats)))

    def forward(self, x):
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class SPPF(nn.Module):
    """Spatial pyramid pooling, fast: three chained 5x5 max-pools stand in for 5, 9 and 13."""

    def __init__(self, c_in, c_out, kernel=5):
        super().__init__()
        hidden = c_in // 2
        self.cv1 = Conv(c_in, hidden, 1, 1)
        self.cv2 = Conv(hidden * 4, c_out, 1, 1)
        self.m = nn.MaxPool2d(kernel_size=kernel, stride=1, padding=kernel // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class Detect(nn.Module):
    def __init__(self, channels, image_size):
        super().__init__()
        self.num_outputs = NUM_CLASSES + 5
        self.num_anchors = len(ANCHORS[0]) // 2
        self.m = nn.ModuleList(nn.Conv2d(c, self.num_outputs * self.num_anchors, 1) for c in channels)
        self._initialize_biases(image_size)
        # The grids are fixed by the image size, so they are buffers (constants in the exported graph),
        # as ultralytics' export with a fixed image size produces.
        for i, stride in enumerate(STRIDES):
            cells = image_size // stride
            ys, xs = torch.meshgrid(torch.arange(cells), torch.arange(cells), indexing="ij")
            grid = torch.stack((xs, ys), 2).view(1, 1, cells, cells, 2).float()
            anchor_grid = torch.tensor(ANCHORS[i], dtype=torch.float32).view(1, self.num_anchors, 1, 1, 2)
            self.register_buffer(f"grid{i}", grid.expand(1, self.num_anchors, cells, cells, 2).contiguous())
            self.register_buffer(
                f"anchor_grid{i}", anchor_grid.expand(1, self.num_anchors, cells, cells, 2).contiguous()
            )

    @torch.no_grad()
    def _initialize_biases(self, image_size):
        """Ultralytics' prior: about 8 objects per 640 image and uniform class probabilities."""
        for conv, stride in zip(self.m, STRIDES, strict=True):
            bias = conv.bias.view(self.num_anchors, -1)
            bias[:, 4] += math.log(8 / (image_size / stride) ** 2)
            bias[:, 5:] += math.log(0.6 / (NUM_CLASSES - 0.99))

    def forward(self, features):
        decoded = []
        for i, x in enumerate(features):
            x = self.m[i](x)
            batch, _, ny, nx = x.shape
            x = x.view(batch, self.num_anchors, self.num_outputs, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            y = x.sigmoid()
            xy = (y[..., 0:2] * 2 - 0.5 + getattr(self, f"grid{i}")) * STRIDES[i]
            wh = (y[..., 2:4] * 2) ** 2 * getattr(self, f"anchor_grid{i}")
            decoded.append(torch.cat((xy, wh, y[..., 4:]), -1).view(batch, -1, self.num_outputs))
        return torch.cat(decoded, 1)


class YOLOv5s(nn.Module):
    def __init__(self, image_size=640):
        super().__init__()
        w = width
        # Backbone (yolov5s.yaml layers 0-9).
        self.b0 = Conv(3, w(64), 6, 2, 2)
        self.b1 = Conv(w(64), w(128), 3, 2)
        self.b2 = C3(w(128), w(128), depth(3))
        self.b3 = Conv(w(128), w(256), 3, 2)
        self.b4 = C3(w(256), w(256), depth(6))
        self.b5 = Conv(w(256), w(512), 3, 2)
        self.b6 = C3(w(512), w(512), depth(9))
        self.b7 = Conv(w(512), w(1024), 3, 2)
        self.b8 = C3(w(1024), w(1024), depth(3))
        self.b9 = SPPF(w(1024), w(1024), 5)
        # PANet neck (layers 10-23).
        self.h10 = Conv(w(1024), w(512), 1, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.h13 = C3(w(1024), w(512), depth(3), shortcut=False)
        self.h14 = Conv(w(512), w(256), 1, 1)
        self.h17 = C3(w(512), w(256), depth(3), shortcut=False)
        self.h18 = Conv(w(256), w(256), 3, 2)
        self.h20 = C3(w(512), w(512), depth(3), shortcut=False)
        self.h21 = Conv(w(512), w(512), 3, 2)
        self.h23 = C3(w(1024), w(1024), depth(3), shortcut=False)
        self.detect = Detect((w(256), w(512), w(1024)), image_size)

    def forward(self, x):
        x = self.b2(self.b1(self.b0(x)))
        p3 = self.b4(self.b3(x))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        h10 = self.h10(p5)
        h14 = self.h14(self.h13(torch.cat((self.up(h10), p4), 1)))
        out_small = self.h17(torch.cat((self.up(h14), p3), 1))
        out_medium = self.h20(torch.cat((self.h18(out_small), h14), 1))
        out_large = self.h23(torch.cat((self.h21(out_medium), h10), 1))
        return self.detect((out_small, out_medium, out_large))
