"""PNG charts (matplotlib, an optional extra: `pip install sizeup[plot]`)."""

from __future__ import annotations

from sizeup.errors import ConfigError


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ConfigError("--plot needs matplotlib: pip install 'sizeup[plot]'") from e
    return plt


def plot_roofline(roofline, path: str) -> None:
    """Ceilings of the device (bandwidth slope, one flat line per precision) and the ops as points,
    placed at their arithmetic intensity and attained FLOP/s, sized by their share of time."""
    import numpy as np

    plt = _pyplot()
    arrays, device = roofline.arrays, roofline.device
    flops = arrays.tensor_flops + arrays.vector_flops
    time = roofline.time["typical"]
    keep = (flops > 0) & (arrays.bytes > 0) & (time > 0)
    intensity = flops[keep] / arrays.bytes[keep]
    attained = flops[keep] / time[keep]
    share = time[keep] / max(time.sum(), 1e-30)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    lo = max(min(intensity.min(initial=1.0), 0.1) / 2, 1e-3)
    hi = max(intensity.max(initial=10.0) * 2, 1e3)
    x = np.logspace(np.log10(lo), np.log10(hi), 200)
    bandwidth = device.memory_bandwidth_bytes_per_s
    peaks = {**{f"vector {k}": v for k, v in device.vector_flops_per_s.items()},
             **{f"tensor {k}": v for k, v in device.peak_flops_per_s.items()}}
    for label, peak in sorted(peaks.items(), key=lambda kv: kv[1]):
        ax.plot(x, np.minimum(x * bandwidth, peak), linewidth=1, label=f"{label}: {peak / 1e12:,.0f} T/s")
    kinds = np.array([o.kind.value for o in arrays.ledger.ops])[keep]
    for kind in sorted(set(kinds)):
        sel = kinds == kind
        ax.scatter(intensity[sel], attained[sel], s=20 + 600 * share[sel], alpha=0.6, label=f"ops: {kind}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("attained FLOP/s (typical efficiency)")
    ax.set_title(f"{arrays.ledger.name} on {device.name}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as e:
        raise ConfigError(f"--plot {path!r}: cannot write ({e.strerror})") from e
    finally:
        plt.close(fig)


def plot_plan(result, folder: str) -> dict[str, str]:
    """PNG plots of a plan: the chosen configuration's memory, decode latency against batch with the
    SLA line, and cost against latency for every configuration that meets the scenario (the Pareto
    front marked). Returns plot name -> path."""
    from pathlib import Path

    plt = _pyplot()
    out = Path(folder)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"--plots {folder!r}: cannot create the folder ({e.strerror})") from e
    paths: dict[str, str] = {}
    chosen = result.chosen or result.closest
    if chosen is not None and chosen.memory_bytes:
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.barh(["needed", "usable"], [chosen.memory_bytes / 2**30, chosen.usable_bytes / 2**30],
                color=["#4c72b0", "#dddddd"])
        ax.set_xlabel("GiB per GPU")
        ax.set_title(f"memory: {chosen.label}")
        fig.tight_layout()
        paths["memory"] = _save(fig, plt, out / "memory.png")
    if chosen is not None and chosen.detail.get("decode_batches"):
        fig, ax = plt.subplots(figsize=(6, 4))
        batches, steps = chosen.detail["decode_batches"], chosen.detail["decode_step_s"]
        ax.plot(batches, [s * 1e3 for s in steps], marker="o", label="TPOT (decode step)")
        for key, target in result.scenario.sla.targets.items():
            if key.startswith("tpot"):
                ax.axhline(target * 1e3, color="red", linestyle="--", label=f"SLA {key}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrent sequences")
        ax.set_ylabel("ms per token")
        ax.legend()
        ax.set_title("latency against batch")
        fig.tight_layout()
        paths["latency_vs_batch"] = _save(fig, plt, out / "latency_vs_batch.png")
    if result.ranked:
        fig, ax = plt.subplots(figsize=(6, 4))
        key = next(iter(result.ranked[0].latency), None)
        if key is not None:
            xs = [c.latency.get(key, 0.0) for c in result.ranked]
            ax.scatter(xs, [c.cost_usd for c in result.ranked], color="#999999", label="meets")
            ax.plot([c.latency.get(key, 0.0) for c in result.pareto], [c.cost_usd for c in result.pareto],
                    color="#c44e52", marker="o", label="Pareto front")
            ax.set_xlabel(key)
            ax.set_ylabel("cost (USD)")
            ax.legend()
            ax.set_title("cost against latency")
            fig.tight_layout()
            paths["pareto"] = _save(fig, plt, out / "pareto.png")
        else:
            plt.close(fig)
    return paths


def _save(fig, plt, path) -> str:
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise ConfigError(f"cannot write plot {str(path)!r} ({e.strerror})") from e
    finally:
        plt.close(fig)
    return str(path)
