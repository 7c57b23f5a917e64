"""A torch model whose forward sleeps, for the tests that stop a real `sizeup measure` mid-sweep (kill -9, the
database going away), and the measured peaks that let `measure` skip its micro-benchmarks. No torch import here:
the model is written to a file and imported by the measuring process."""

MODEL = """import time

import torch


class Slow(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        time.sleep({sleep_s})
        return self.linear(x)


def build():
    return Slow()
"""
BENCH = {"device": "cpu", "dtype": "fp32", "gemm": [], "matmul_flops_per_s": 1e11, "copy_bytes_per_s": 1e10,
         "measured": "2026-12-03 12:00:00", "catalog_id": None}
"""Micro-benchmark results saved as the "local" profile before a sweep."""


def slow_model(sleep_s: float) -> str:
    return MODEL.format(sleep_s=sleep_s)
