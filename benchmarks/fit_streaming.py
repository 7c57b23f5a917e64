"""Derive data/efficiency/streaming.yaml's curve: what measured linear layers take beyond max(weight read, compute).

Input: vidur's per-op profiles of Llama-2-70B (github.com/microsoft/vidur, data/profiling/compute/<gpu>/meta-llama/
Llama-2-70b-hf/mlp.csv; fetch the repository and pass the files). Per GPU and tensor-parallel degree (1, 2, 4; TP8's
1 / 8 slices are launch-bound and left out) the time t(M) of the four linear layers of one transformer layer
(attn_pre_proj, attn_post_proj, mlp_up_proj, mlp_down_proj; medians) at M tokens gives R = the median t at M <= 8
(the weight read as measured) and C(M) = M x the median t / M at M >= 3,072 (the compute as measured). Each point's
(t - max(R, C)) / R is grouped in half-octaves of r = C / R: the median of a group (typical) and its quartiles
(low / high, negative ones taken as 0), printed as the yaml's lists.

Run: python benchmarks/fit_streaming.py h100=PATH/h100/.../mlp.csv a100=PATH/a100/.../mlp.csv
"""

from __future__ import annotations

import csv
import math
import statistics
import sys

OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")


def profiles(gpu: str, path: str) -> dict[tuple[str, str], tuple[float, float, dict[int, float]]]:
    """(gpu, tp) -> (R, compute per token, {M: t}) of one vidur mlp.csv."""
    rows = list(csv.DictReader(open(path, newline="")))
    tp_key = next(k for k in rows[0] if k.startswith("num_tensor_parallel"))
    out = {}
    for tp in ("1", "2", "4"):
        times: dict[int, list[float]] = {}
        for r in rows:
            if r[tp_key] == tp:
                times.setdefault(int(r["num_tokens"]), []).append(sum(float(r[f"time_stats.{o}.median"]) for o in OPS))
        t = {m: statistics.median(v) for m, v in times.items()}
        read = statistics.median([t[m] for m in t if m <= 8])
        per_token = statistics.median([t[m] / m for m in t if m >= 3072])
        out[(gpu, tp)] = (read, per_token, t)
    return out


def main() -> None:
    data = {}
    for arg in sys.argv[1:]:
        gpu, _, path = arg.partition("=")
        data.update(profiles(gpu, path))
    edges = [0.0625 * 2 ** (i / 2) for i in range(19)]
    table: dict[str, list[float]] = {"compute_to_read": [], "low": [], "typical": [], "high": []}
    for lo, hi in zip(edges, edges[1:]):
        xs = [(t - max(read, per_token * m)) / read for read, per_token, ts in data.values()
              for m, t in ts.items() if lo * read <= per_token * m < hi * read]
        if len(xs) < 4:
            continue
        q = statistics.quantiles(xs, n=4)
        for key, value in (("compute_to_read", math.sqrt(lo * hi)), ("low", q[0]), ("typical", statistics.median(xs)),
                           ("high", q[2])):
            table[key].append(round(max(value, 0.0), 3))
    for key, values in table.items():
        print(f"  {key}: {values}")


if __name__ == "__main__":
    main()
