"""Toy data loaders for the input-pipeline tests: one CPU-heavy (every sample burns CPU time, a stand-in for
decoding and a mosaic augmentation), one that waits on a slow read before a little CPU work, and a plain
iterable."""

import time

import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds  # CPU time, not wall time: the same work however busy the machine is
    while time.thread_time() < end:
        pass


class CpuHeavy(Dataset):
    def __init__(self, n=4096, cpu_s=0.003):
        self.n, self.cpu_s = n, cpu_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        _burn(self.cpu_s)
        return torch.zeros(3, 32, 32), i % 10


class SlowRead(Dataset):
    def __init__(self, n=4096, wait_s=0.010, cpu_s=0.0005):
        self.n, self.wait_s, self.cpu_s = n, wait_s, cpu_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.wait_s)
        _burn(self.cpu_s)
        return torch.zeros(3, 32, 32), i % 10


def cpu_heavy(num_workers=0):
    return DataLoader(CpuHeavy(), batch_size=8, num_workers=num_workers)


def mosaic_heavy(num_workers=0):
    """12 ms of CPU per sample (a decode plus a mosaic augmentation on a slow core): under 100 samples/s a core."""
    return DataLoader(CpuHeavy(cpu_s=0.012), batch_size=8, num_workers=num_workers)


def slow_read():
    """No num_workers parameter: the DataLoader it returns is rebuilt for each count."""
    return DataLoader(SlowRead(), batch_size=8)


def plain_iterable():
    return ([torch.zeros(4, 2)] * 3 for _ in range(1))


def images(num_workers=0, n=1600, batch=32):
    """A small image-classification set for the trial tests (fixed seed: the same data each time)."""
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(n, 3, 32, 32, generator=g), torch.randint(0, 10, (n,), generator=g))
    return DataLoader(data, batch_size=batch, shuffle=True, num_workers=num_workers,
                      generator=torch.Generator().manual_seed(1))


def images_small(num_workers=0):
    """160 images: 5 batches of 32 per epoch (trials that cross epochs)."""
    return images(num_workers=num_workers, n=160)
