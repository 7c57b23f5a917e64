"""Time a user's data loader (`sizeup measure --dataloader FILE.py:FACTORY`) at several worker counts.

FACTORY is called to build the loader for each worker count:
- a factory with a `num_workers` parameter is called with it (`def loader(num_workers=0): return DataLoader(…)`);
- otherwise it is called with no argument; a `torch.utils.data.DataLoader` it returns is rebuilt for each worker
  count with the same dataset, batch size or batch sampler, collate function, drop_last and shuffling;
- any other iterable is timed once, as it comes.

For each count the first batch is timed apart (worker start-up and the first fill: `startup_s`), then batches
are drawn until `batches` or the time budget, and the rate is the samples counted in them over the time taken.
A batch's sample count is the leading dimension of its first tensor (a tensor, or one inside a tuple, list or
dict), else `len()` of the batch.
"""

from __future__ import annotations

import inspect
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sizeup.errors import ConfigError, MeasureError

__all__ = ["LoaderPoint", "LoaderMeasurement", "loader_builder", "measure_loader", "batch_samples", "usable_cores"]


def usable_cores() -> int:
    """Logical cores this process may run on (its affinity), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def batch_samples(batch: Any) -> int:
    """Samples in one batch: the leading dimension of its first tensor-like element, else its length."""
    seen = [batch]
    while seen:
        item = seen.pop(0)
        shape = getattr(item, "shape", None)
        if shape is not None and len(shape) >= 1:
            return int(shape[0])
        if isinstance(item, dict):
            seen.extend(item.values())
        elif isinstance(item, (list, tuple)):
            seen.extend(item)
    try:
        return len(batch)
    except TypeError:
        return 1


@dataclass(frozen=True, slots=True, kw_only=True)
class LoaderPoint:
    workers: int | None
    """None: an iterable timed as it came (its own setting)."""
    samples: int
    batches: int
    elapsed_s: float
    startup_s: float
    batch_s: tuple[float, ...]
    batch_size: int
    cpu_s_per_sample: float | None = None
    """CPU time one sample cost: this process's while it loaded alone (0 workers), else the workers' (children's
    CPU time once they exited, over the samples consumed — batches they prefetched and were not used make it an
    over-estimate)."""

    @property
    def samples_per_s(self) -> float:
        return self.samples / self.elapsed_s if self.elapsed_s > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        spread = {}
        if len(self.batch_s) >= 2:
            ordered = sorted(self.batch_s)
            spread = {"batch_p50_s": statistics.median(ordered),
                      "batch_p90_s": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]}
        return {"workers": self.workers, "samples": self.samples, "batches": self.batches,
                "elapsed_s": self.elapsed_s, "startup_s": self.startup_s, "batch_size": self.batch_size,
                "samples_per_s": self.samples_per_s, "cpu_s_per_sample": self.cpu_s_per_sample} | spread


@dataclass(frozen=True, slots=True, kw_only=True)
class LoaderMeasurement:
    target: str
    points: tuple[LoaderPoint, ...]
    cores: int
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "cores": self.cores, "points": [p.to_dict() for p in self.points],
                "notes": list(self.notes)}


def _rebuild(loader, workers: int):
    from torch.utils.data import DataLoader, RandomSampler

    if loader.batch_size is None:  # a custom batch sampler: keep it
        return DataLoader(loader.dataset, batch_sampler=loader.batch_sampler, collate_fn=loader.collate_fn,
                          num_workers=workers, pin_memory=loader.pin_memory,
                          worker_init_fn=loader.worker_init_fn)
    return DataLoader(loader.dataset, batch_size=loader.batch_size, shuffle=isinstance(loader.sampler, RandomSampler),
                      collate_fn=loader.collate_fn, drop_last=loader.drop_last, num_workers=workers,
                      pin_memory=loader.pin_memory, worker_init_fn=loader.worker_init_fn)


def loader_builder(target: str) -> tuple[Callable[[int | None], Iterable], bool, str]:
    """(build(workers), whether worker counts apply, how) for FILE.py:FACTORY."""
    from sizeup.ingest.target import load_factory

    try:
        factory = load_factory(target)
    except Exception as e:  # noqa: BLE001 — an IngestError names the model file; say it is the loader
        raise ConfigError(f"--dataloader {target!r}: {str(e).replace('model file', 'file')}") from None
    try:
        takes_workers = "num_workers" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        takes_workers = False

    def call(**kwargs):
        try:
            return factory(**kwargs)
        except Exception as e:  # noqa: BLE001 — the user's factory failed: one line naming it
            raise MeasureError(f"--dataloader {target!r} raised {type(e).__name__}: {e}") from None

    if takes_workers:
        return (lambda workers: call(num_workers=workers or 0)), True, "FACTORY(num_workers=N)"
    probe = call()
    try:
        from torch.utils.data import DataLoader
    except ImportError:  # no torch: any iterable is timed as it comes
        DataLoader = ()  # noqa: N806
    if DataLoader and isinstance(probe, DataLoader):
        return (lambda workers: _rebuild(call(), workers or 0)), True, "the DataLoader rebuilt with num_workers=N"
    if not isinstance(probe, Iterable):
        raise ConfigError(f"--dataloader {target!r}: FACTORY returned a {type(probe).__name__}, expected a DataLoader "
                          "or another iterable of batches")
    return (lambda workers: call()), False, "an iterable timed as it comes (no num_workers to vary)"


def _children_cpu_s() -> float:
    try:
        import resource

        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime
    except (ImportError, OSError):
        return 0.0


def _time_one(loader: Iterable, batches: int, budget_s: float, in_process: bool):
    """(samples, batches, elapsed after the first batch, startup, per-batch times, batch size, CPU s per sample)."""
    import gc

    children0 = _children_cpu_s()
    start = time.perf_counter()
    iterator = iter(loader)
    try:
        first = next(iterator)
    except StopIteration:
        raise MeasureError("the data loader yielded no batch") from None
    startup = time.perf_counter() - start
    size = batch_samples(first)
    samples = count = 0
    times: list[float] = []
    cpu0 = time.process_time()
    t0 = last = time.perf_counter()
    deadline = t0 + budget_s
    for batch in iterator:
        now = time.perf_counter()
        times.append(now - last)
        last = now
        samples += batch_samples(batch)
        count += 1
        if count >= batches or now >= deadline:
            break
    elapsed = last - t0
    cpu = time.process_time() - cpu0
    del iterator  # shuts the workers down (they are joined, so their CPU time is counted)
    gc.collect()
    if in_process:
        per_sample = cpu / samples if samples else None
    else:
        spent = _children_cpu_s() - children0
        per_sample = spent / (samples + size) if spent > 0 else None
    return samples, count, elapsed, startup, times, size, per_sample


def measure_loader(target: str, workers: Sequence[int] | None = None, *, batches: int = 40,
                   budget_s: float = 60.0) -> LoaderMeasurement:
    """Time `target`'s loader at each worker count (default 0, 1, 2, 4, … up to the usable cores)."""
    cores = usable_cores()
    if workers is None:
        workers = [0] + [w for w in (1, 2, 4, 8, 16, 32, 64) if w <= cores]
    if not workers or any(isinstance(w, bool) or not isinstance(w, int) or w < 0 for w in workers):
        raise ConfigError(f"--workers {list(workers)!r}: expected worker counts >= 0")
    if batches < 2:
        raise ConfigError(f"--batches {batches}: expected 2 or more")
    build, varies, how = loader_builder(target)
    counts: list[int | None] = list(dict.fromkeys(workers)) if varies else [None]
    notes = [f"built as {how}"]
    if any(w is not None and w > cores for w in counts):
        notes.append(f"more workers than the {cores} usable cores: those points share cores")
    per_point = budget_s / len(counts)
    points = []
    import warnings

    for w in counts:
        with warnings.catch_warnings():  # torch's "more workers than cores" warning: the note above says it
            warnings.filterwarnings("ignore", message="This DataLoader will create")
            samples, count, elapsed, startup, times, size, cpu = _time_one(build(w), batches, per_point,
                                                                           in_process=not w)
        if count == 0:
            where = "as it came" if w is None else f"at {w} workers"
            raise MeasureError(f"the data loader yielded only one batch {where}: give it more data to time")
        points.append(LoaderPoint(workers=w, samples=samples, batches=count, elapsed_s=elapsed, startup_s=startup,
                                  batch_s=tuple(times), batch_size=size, cpu_s_per_sample=cpu))
    return LoaderMeasurement(target=target, points=tuple(points), cores=cores, notes=tuple(notes))
