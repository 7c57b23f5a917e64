"""A trial run: train the user's model on the user's data loader for a few steps (`sizeup measure MODEL --train
--dataloader DATA.py:FACTORY --steps 50`), timing each step as a training loop sees it — the wait for the next
batch, forward, loss, backward, optimizer step — with the peak memory and where each epoch restarted the loader.
`sizeup train --from-run RUN --samples N --epochs E` scales it to the full job (workload/trial_scale.py).

The loss: a batch `(inputs, targets)` with integer class targets against `[batch, classes]` outputs is
cross-entropy; targets of the output's shape, mean squared error; anything else (inputs only) the mean of the
squared outputs — a stand-in with the same backward through the model, named in the run's notes.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from sizeup.errors import ConfigError, MeasureError
from sizeup.measure.dataloader import batch_samples, loader_builder

__all__ = ["TrialConfig", "TrialResult", "run_trial"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrialConfig:
    model: str
    loader: str
    steps: int = 50
    workers: int | None = None
    """The loader's worker count (None: as the factory builds it)."""
    device: str = "cpu"
    optimizer: str = "adamw"
    dtype: str = "fp32"
    warmup: int = 3
    """Steps run before the timed ones (allocation, first-touch, lazy init); stored apart."""
    lr: float = 1e-3

    def __post_init__(self) -> None:
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or not 5 <= self.steps <= 1_000_000:
            raise ConfigError(f"--steps {self.steps!r}: expected 5 to 1,000,000 trial steps")
        if self.workers is not None and self.workers < 0:
            raise ConfigError(f"--workers {self.workers}: expected 0 or more")
        if self.optimizer not in ("adamw", "adam", "sgd"):
            raise ConfigError(f"--optimizer {self.optimizer!r}: expected adamw, adam or sgd")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrialResult:
    config: TrialConfig
    step_s: tuple[float, ...]
    """Each timed step, data wait included."""
    data_wait_s: tuple[float, ...]
    """Of each timed step, the wait for its batch."""
    epoch_start: tuple[bool, ...]
    """Whether the step's batch was the first of an epoch (the loader restarted: its workers start again)."""
    warmup_s: tuple[float, ...]
    cpu_s: tuple[float, ...] = ()
    """Each timed step's CPU time on the training thread, when all the step's work runs there (the CPU device,
    one torch thread, the loader in-process): what the step costs without other processes taking turns."""
    batch_size: int
    samples_per_epoch: int | None
    """len(dataset) of a DataLoader, or the samples seen in a full pass; None when no pass completed."""
    drop_last: bool
    peak_memory_bytes: int
    memory_kind: str
    """'cuda allocated' or 'rss' (the process's resident memory above its level before the model was built)."""
    loss: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def loader_rate(self) -> float | None:
        """Samples/s the loader delivered while the steps waited on it (None: it never made a step wait)."""
        waited = sum(w for w, first in zip(self.data_wait_s, self.epoch_start) if not first)
        steps = sum(1 for first in self.epoch_start if not first)
        return steps * self.batch_size / waited if waited > 0 else None

    @property
    def epoch_restart_s(self) -> float | None:
        """Extra wait at an epoch's first batch over a normal batch's (the loader's start-up), mean over the
        restarts seen; None when the trial crossed no epoch boundary."""
        firsts = [w for w, first in zip(self.data_wait_s, self.epoch_start) if first]
        others = [w for w, first in zip(self.data_wait_s, self.epoch_start) if not first]
        if not firsts or not others:
            return None
        return max(0.0, statistics.fmean(firsts) - statistics.median(others))

    def to_dict(self) -> dict[str, Any]:
        steps = sorted(self.step_s)
        return {"model": self.config.model, "loader": self.config.loader, "device": self.config.device,
                "steps": len(self.step_s), "batch_size": self.batch_size, "samples_per_epoch": self.samples_per_epoch,
                "step_mean_s": statistics.fmean(self.step_s), "step_p50_s": statistics.median(steps),
                "step_p90_s": steps[min(len(steps) - 1, int(0.9 * len(steps)))],
                "data_wait_share": sum(self.data_wait_s) / sum(self.step_s),
                "loader_samples_per_s": self.loader_rate, "epoch_restart_s": self.epoch_restart_s,
                "peak_memory_bytes": self.peak_memory_bytes, "memory_kind": self.memory_kind, "loss": self.loss,
                "cpu_step_mean_s": statistics.fmean(self.cpu_s) if self.cpu_s else None,
                "warmup_s": list(self.warmup_s), "notes": list(self.notes)}


def _to(batch: Any, device):
    import torch

    if torch.is_tensor(batch):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to(b, device) for b in batch)
    if isinstance(batch, dict):
        return {k: _to(v, device) for k, v in batch.items()}
    return batch


def _loss(model, batch) -> tuple[Any, str]:
    """(loss tensor, which loss) for one batch."""
    import torch
    from torch.nn import functional as F

    if isinstance(batch, dict):
        out = model(**batch)
        loss = getattr(out, "loss", None)
        if loss is not None:
            return loss, "the model's own loss"
        return _standin(out), "mean of squared outputs (stand-in)"
    if isinstance(batch, (list, tuple)) and len(batch) == 2 and torch.is_tensor(batch[1]):
        x, y = batch
        out = model(x)
        if torch.is_tensor(out) and out.dim() == 2 and y.dim() == 1 and not y.is_floating_point() \
                and y.shape[0] == out.shape[0]:
            return F.cross_entropy(out.float(), y), "cross-entropy"
        if torch.is_tensor(out) and out.shape == y.shape:
            return F.mse_loss(out.float(), y.float()), "mean squared error"
        return _standin(out), "mean of squared outputs (stand-in: targets of another shape)"
    inputs = batch if isinstance(batch, (list, tuple)) else (batch,)
    return _standin(model(*inputs)), "mean of squared outputs (stand-in: no targets)"


def _standin(out):
    import torch

    outputs = out if isinstance(out, (list, tuple)) else [out]
    tensors = [o for o in outputs if torch.is_tensor(o) and o.is_floating_point()]
    if not tensors:
        raise MeasureError("the model returned no floating-point tensor to train on")
    return sum(t.float().pow(2).mean() for t in tensors)


def run_trial(cfg: TrialConfig) -> TrialResult:
    """Train `cfg.model` on `cfg.loader` for `cfg.warmup` + `cfg.steps` steps on `cfg.device`."""
    import torch

    from sizeup.ingest.target import load_factory
    from sizeup.measure.harness import _RSSPeak, build_model, records_cpu_time, resolve_device, synchronize
    from sizeup.ingest.torch_trace import torch_dtype

    device = resolve_device(cfg.device)
    build, varies, how = loader_builder(cfg.loader)
    if cfg.workers is not None and not varies:
        raise ConfigError(f"--workers {cfg.workers}: the loader factory takes no num_workers and returns no "
                          "DataLoader, so its worker count cannot be set here")
    loader = build(cfg.workers)
    cpu_timed = records_cpu_time(device) and not getattr(loader, "num_workers", 0)
    dataset = getattr(loader, "dataset", None)
    samples_per_epoch = None
    try:
        samples_per_epoch = len(dataset) if dataset is not None else None
    except TypeError:
        samples_per_epoch = None
    drop_last = bool(getattr(loader, "drop_last", False))
    rss = _RSSPeak()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    model = build_model(load_factory(cfg.model), device, torch_dtype(cfg.dtype))
    model.train()
    optimizers = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam, "sgd": torch.optim.SGD}
    optimizer = optimizers[cfg.optimizer](model.parameters(), lr=cfg.lr)
    iterator = iter(loader)
    first_of_epoch = True
    seen_in_epoch = 0
    steps: list[float] = []
    waits: list[float] = []
    starts: list[bool] = []
    warm: list[float] = []
    cpu: list[float] = []
    loss_kind = ""
    batch_size = 0
    rss.__enter__()  # the 2 ms sampling thread runs through the warm-up only: it would slow the timed steps
    sampling = True
    try:
        for k in range(cfg.warmup + cfg.steps):
            if sampling and k >= cfg.warmup:
                rss.__exit__(None, None, None)
                sampling = False
            c0, t0 = time.thread_time(), time.perf_counter()
            try:
                batch = next(iterator)
                epoch_start = first_of_epoch
            except StopIteration:
                if seen_in_epoch and samples_per_epoch is None:
                    samples_per_epoch = seen_in_epoch
                iterator = iter(loader)
                try:
                    batch = next(iterator)
                except StopIteration:
                    raise MeasureError("the data loader yielded no batch") from None
                epoch_start, seen_in_epoch = True, 0
            first_of_epoch = False
            t1 = time.perf_counter()
            n = batch_samples(batch)
            seen_in_epoch += n
            batch_size = max(batch_size, n)
            batch = _to(batch, device)
            loss, loss_kind = _loss(model, batch)
            if not torch.isfinite(loss):
                raise MeasureError(f"the loss is {float(loss)} at step {k + 1}: the trial cannot go on")
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            synchronize(device)
            t2 = time.perf_counter()
            if k < cfg.warmup:
                warm.append(t2 - t0)
                continue
            steps.append(t2 - t0)
            cpu.append(time.thread_time() - c0)
            waits.append(t1 - t0)
            starts.append(epoch_start)
            rss.peak = max(rss.peak, rss._rss())  # one read of /proc/self/statm per step
    finally:
        if sampling:
            rss.__exit__(None, None, None)
    del iterator
    if device.type == "cuda":
        peak, kind = int(torch.cuda.max_memory_allocated(device)), "cuda allocated"
    else:
        peak, kind = rss.delta, "rss"
    notes = [f"loader built as {how}", f"loss: {loss_kind}", f"{cfg.warmup} warm-up steps not timed"]
    if cpu_timed and cpu:
        share = 1 - sum(cpu) / sum(steps)
        if share > 0.1:
            notes.append(f"other processes took {share:.0%} of the trial's time (CPU time {sum(cpu):.2f} s of "
                         f"{sum(steps):.2f} s wall): the job on an idle machine is its CPU-time figure")
    if samples_per_epoch is None:
        notes.append("the dataset's size is unknown (no len() and no full pass in the trial): give --samples")
    return TrialResult(config=cfg, step_s=tuple(steps), data_wait_s=tuple(waits), epoch_start=tuple(starts),
                       warmup_s=tuple(warm), cpu_s=tuple(cpu) if cpu_timed else (), batch_size=batch_size, samples_per_epoch=samples_per_epoch,
                       drop_last=drop_last, peak_memory_bytes=peak, memory_kind=kind, loss=loss_kind,
                       notes=tuple(notes))


def trial_from_stored(run_config: dict, point_extra: dict, step_s: list[float],
                      cpu_s: list[float] = ()) -> dict[str, Any]:
    """The fields scaling needs from a stored trial run (stored by cli/commands/measure_loader.py)."""
    return {"step_s": step_s, "cpu_s": list(cpu_s), "batch_size": int(run_config["batch_size"]),
            "samples_per_epoch": run_config.get("samples_per_epoch"), "drop_last": bool(run_config.get("drop_last")),
            "epoch_restart_s": point_extra.get("epoch_restart_s"), "data_wait_share": point_extra.get("data_wait_share"),
            "loader_samples_per_s": point_extra.get("loader_samples_per_s"),
            "peak_memory_bytes": point_extra.get("peak_memory_bytes"), "memory_kind": point_extra.get("memory_kind"),
            "device": run_config.get("device"), "model": run_config.get("model")}
