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
