"""All-reduce and all-gather bus bandwidth over message sizes, with torch.distributed (gloo on CPUs,
NCCL on GPUs), for the communication model. Under `torchrun` it uses the launcher's ranks; on its own
it spawns `world_size` local processes talking over 127.0.0.1.

Bus bandwidth follows nccl-tests: all-reduce moves 2·(n−1)/n of the message per rank, all-gather
(n−1)/n, so busbw = size × factor / time is comparable with the link's bandwidth.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from sizeup.errors import MeasureError

__all__ = ["measure_collectives", "DEFAULT_SIZES"]

DEFAULT_SIZES = tuple(2**k for k in range(10, 25, 2))  # 1 KiB .. 16 MiB
_FACTORS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, backend: str, sizes: tuple[int, ...], repetitions: int, queue) -> None:
    import torch
    import torch.distributed as dist

    dist.init_process_group(backend, rank=rank, world_size=world)
    device = torch.device(f"cuda:{rank}") if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    rows = []
    for size in sizes:
        tensor = torch.ones(max(size // 4, 1), dtype=torch.float32, device=device)
        gathered = [torch.empty_like(tensor) for _ in range(world)]
        for op in ("all_reduce", "all_gather"):
            run = (lambda: dist.all_reduce(tensor)) if op == "all_reduce" else (
                lambda: dist.all_gather(gathered, tensor))
            run()  # warm-up
            if backend == "nccl":
                torch.cuda.synchronize()
            dist.barrier()
            start = time.perf_counter()
            for _ in range(repetitions):
                run()
            if backend == "nccl":
                torch.cuda.synchronize()
            elapsed = (time.perf_counter() - start) / repetitions
            rows.append({"op": op, "size_bytes": tensor.numel() * 4, "time_s": elapsed,
                         "bus_bytes_per_s": tensor.numel() * 4 * _FACTORS[op](world) / elapsed})
    if rank == 0:
        queue.put(rows)
    dist.destroy_process_group()


def measure_collectives(world_size: int = 2, backend: str = "gloo", sizes: tuple[int, ...] = DEFAULT_SIZES,
                        repetitions: int = 10) -> list[dict[str, Any]]:
    """Bus bandwidth of all-reduce and all-gather per message size, measured by rank 0."""
    import torch
    import torch.multiprocessing as mp

    if backend not in ("gloo", "nccl"):
        raise MeasureError(f"backend {backend!r}: expected gloo or nccl")
    if world_size < 2:
        raise MeasureError(f"world size {world_size}: a collective needs at least 2 processes")
    if backend == "nccl" and torch.cuda.device_count() < world_size:
        raise MeasureError(f"nccl with {world_size} processes needs {world_size} GPUs "
                           f"({torch.cuda.device_count()} here)")
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # launched by torchrun
        queue = mp.get_context("spawn").SimpleQueue()
        _worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), backend, sizes, repetitions, queue)
        return queue.get() if int(os.environ["RANK"]) == 0 else []
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(_free_port())
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    processes = [ctx.Process(target=_worker, args=(rank, world_size, backend, sizes, repetitions, queue))
                 for rank in range(world_size)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=300)
    if any(p.exitcode != 0 for p in processes):
        raise MeasureError(f"a collective process failed (exit codes {[p.exitcode for p in processes]})")
    return queue.get()
