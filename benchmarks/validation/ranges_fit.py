"""The calibrated range table (src/sizeup/data/efficiency/ranges.yaml) from out-of-sample results.

Per row the ratio measured / predicted (a time's inverse, so that every ratio reads like a rate's), of its
leave-one-source-out prediction. Per cell (kind, engine, device class), per engine (every class) and per kind (every
engine): the order statistics of the ratios that hold `coverage` of them with a finite-sample correction (the
ceil((n+1) q)-th of n), so a small cell takes its extremes; low is at most 1 and high at least 1 (a range holds its
typical value). The widening factors are calibrated the same way: the smallest factor (on the log-ratios) at which
the pool left without a whole device class (engine, architecture, devices with derived peaks) covers that group's
rows at TARGET (80%, issue 29's target on hidden rows); an engine no row backs is widened at least ENGINE_FLOOR.
The derived-peak factor is calibrated per (kind, engine) on that pair's rows alone, within a device class; a pair
with fewer than MIN_HELD_OUT held-out rows takes the widest calibrated factor, at least FALLBACK_FACTOR, so one
pair's rows cannot narrow another's.
Kinds no row backs take a stated default (DEFAULT_RULES); an engine with too few rows of a kind that has such a
default gets the pool of every engine widened, and never less than that default (price/ranges_table.py lookup), so
one engine's rows cannot narrow another's unbacked case. A traced model's engine (its runtime) with too few rows
takes its runtime family's pool (runtime_families: fusing or op-by-op), widened by the engine factor, before the
pool of every engine. A bound row (rows.py `bound`: the source's value only bounds
what it measured) sets no quantile, factor or default; it is judged by side in the coverage (inside when the range
reaches the side of the bound the measurement lies on)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from datetime import date
from functools import lru_cache

from .runner import COUNTED_KINDS, metric_of
from .summary import Result

ANY = "*"
FAMILY = "family:"
"""The engine key prefix of a runtime family's pool (cells[kind]["family:NAME"]["*"])."""
FAMILY_KINDS = ("traced_model",)
"""Kinds whose engines pool by runtime family before every engine's pool (runtime_families)."""
COVERAGE = 0.9
"""Nominal share of out-of-sample rows inside a cell's range (the target on hidden rows is 80%: the margin is for
sources unlike any seen)."""
MIN_ROWS = 15
"""Rows a cell needs to take its own quantiles; fewer: the engine's pool on every device class, widened."""
MIN_KIND_ROWS = 8
"""Rows a kind needs for its pool of every engine; fewer: the table's default for the kind."""
FACTORS = [round(1 + 0.05 * i, 2) for i in range(0, 61)]
"""Widening factors tried, 1.0 to 4.0."""
TARGET = 0.8
"""The share of hidden rows a range must hold (issue 29): widening factors restore it on groups left out."""
MIN_HELD_OUT = 10
"""Held-out rows a widening factor needs to be calibrated; fewer: FALLBACK_FACTOR, stated."""
FALLBACK_FACTOR = 1.5
RELEASE_FACTOR = 1.25
"""An engine release no row ran (the rows naming none count as the current release): a stated judgment, as the rows
naming releases are too few to calibrate it."""
DERIVED_PEAK_CALIBRATED = ("prefill", "training_step", "traced_model")
"""Kinds whose rows calibrate the derived-peak factor (they run at the 16-bit compute peak)."""
ENGINE_FLOOR = 1.5
"""The least widening of a figure whose engine no row backs: an engine never measured (a new one: mlx, sglang,
exllamav2, ...) may differ from the measured ones more than they differ from each other (a stated judgment)."""
DEFAULT_RULES = {
    "latency_percentile": (("prefill", "decode"), 1.5, "no published row checks latency percentiles under load: the "
                           "out-of-sample ratios of the prefill and decode rows together, widened by 1.5 for the "
                           "queueing model (not validated; a stated judgment)"),
    "memory": (("training_memory",), 1.0, "an inference engine's total memory with no row of its own: the "
               "out-of-sample ratios of the training and fine-tuning memory rows (the measured totals: allocator "
               "reserve, fragmentation, CUDA context); an engine without rows is never given less than this "
               "(price/ranges_table.py lookup)"),
    ANY: (("decode", "prefill", "serving_throughput", "training_step", "traced_model"), None,
          "a kind no row backs: the out-of-sample ratios of every speed row, widened by the engine factor"),
}


@lru_cache(maxsize=1)
def runtime_families() -> dict[str, str]:
    """Each traced-model runtime's family, from how sizeup prices it (data/efficiency/overheads.yaml): 'fusing' where
    the runtime folds norms and elementwise ops into the matrix kernels before it runs (`fuses`: TensorRT, ONNX
    Runtime, torch.compile), 'op-by-op' where every op is its own kernel dispatched from the host (no `fuses`, no
    `per_graph_s`: PyTorch eager). A runtime of neither (unfused kernels replayed from a graph: cuda-graphs) has no
    family. An engine with too few rows of its own takes its family's pool before the pool of every engine: a fused
    engine's errors (its fusion and kernel choice) are not an eager framework's (its per-op host dispatch, which
    varies with the host: 60 us per op as tuned on the DeepLearningExamples ResNet-50 rows, at most 9 us on TRTBench's
    YOLOv8n row, 2.49 ms over the 280 kernels sizeup counts)."""
    from sizeup.hardware.catalog import builtin_data_dir, read_yaml

    runtimes = read_yaml(builtin_data_dir() / "efficiency" / "overheads.yaml")["runtimes"]
    return {name: "fusing" if spec.get("fuses") else "op-by-op" for name, spec in sorted(runtimes.items())
            if spec.get("fuses") or "per_graph_s" not in spec}


def families() -> dict[str, dict[str, str]]:
    """Per kind of FAMILY_KINDS, each engine key's family (the table's `families`, read by price/ranges_table.py)."""
    return {kind: dict(runtime_families()) for kind in FAMILY_KINDS}


def usable(results: Iterable[Result]) -> list[Result]:
    """Rows that calibrate a range: priced, not a count or a component, not on off-catalog hardware, and not a tuned
    row whose leave-one-source-out fell back to a table without its own entry (loso.fell_back: that prices a table
    users do not get; those rows are reported apart in docs/ACCURACY.md)."""
    return [r for r in results if r.predicted is not None and r.context.kind not in COUNTED_KINDS
            and not r.row.get("off_catalog") and r.predicted.typical > 0 and not r.fallback]


def calibrating(results: Iterable[Result]) -> list[Result]:
    """The usable rows that set quantiles, factors and defaults: measured values, not bounds."""
    return [r for r in usable(results) if r.bound is None]


def ratio_bound(r: Result) -> str | None:
    """Which side of the row's true ratio its ratio is, for a bound row: 'upper' (the true ratio is at most it) or
    'lower'; None for a measured value. A time's ratio is inverted, so its bound flips."""
    if r.bound is None:
        return None
    flip = {"upper": "lower", "lower": "upper"}
    return flip[r.bound] if metric_of(r.row).time else r.bound


def within(r: Result, low: float, high: float) -> bool:
    """Whether the row's ratio lies in [low, high]; for a bound row, whether [low, high] reaches its side."""
    q, side = ratio(r), ratio_bound(r)
    above_low, below_high = low * (1 - 1e-9) <= q, q <= high * (1 + 1e-9)
    return above_low if side == "upper" else below_high if side == "lower" else above_low and below_high


def ratio(r: Result) -> float:
    """measured / predicted in a rate's sense (for a time, predicted / measured)."""
    q = r.row.value / r.predicted.typical
    return 1 / q if metric_of(r.row).time else q


def quantiles(ratios: list[float], coverage: float = COVERAGE) -> tuple[float, float]:
    xs = sorted(ratios)
    n = len(xs)
    tail = (1 - coverage) / 2
    lo = max(1, math.floor((n + 1) * tail))
    hi = min(n, math.ceil((n + 1) * (1 - tail)))
    return min(xs[lo - 1], 1.0), max(xs[hi - 1], 1.0)


def _cell(members: list[Result], coverage: float) -> dict:
    low, high = quantiles([ratio(r) for r in members], coverage)
    types: dict[str, int] = {}
    releases: dict[str, int] = {}
    for r in members:
        types[r.context.model_type] = types.get(r.context.model_type, 0) + 1
        releases[r.context.release] = releases.get(r.context.release, 0) + 1
    return {"rows": len(members), "sources": len({r.row.source for r in members}), "low": round(low, 4),
            "high": round(high, 4), "model_types": dict(sorted(types.items())), "releases": dict(sorted(releases.items()))}


def cells(results: list[Result], coverage: float = COVERAGE, engine_families: dict | None = None) -> dict:
    out: dict = {}
    groups: dict[tuple[str, str, str], list[Result]] = {}
    fams = families() if engine_families is None else engine_families
    for r in calibrating(results):
        k, e, c = r.context.kind, r.context.engine, r.context.device_class
        keys = [(k, e, c), (k, e, ANY), (k, ANY, ANY)]
        if (family := fams.get(k, {}).get(e)) is not None:
            keys.append((k, FAMILY + family, ANY))
        for key in keys:
            groups.setdefault(key, []).append(r)
    for (k, e, c), members in sorted(groups.items()):
        out.setdefault(k, {}).setdefault(e, {})[c] = _cell(members, coverage)
    return out


def _calibrate(pairs: list[tuple[list[Result], list[Result]]], coverage: float) -> tuple[float, int, float]:
    """(factor, held-out rows, coverage at factor 1) over (pool, held-out) pairs: the smallest factor at which the
    pools' `coverage` ranges hold TARGET of the held-out rows."""
    held = sum(len(h) for _, h in pairs)
    if held < MIN_HELD_OUT:
        return FALLBACK_FACTOR, held, float("nan")
    prepared = [(*(math.log(q) for q in quantiles([ratio(r) for r in p], coverage)), [ratio(r) for r in h])
                for p, h in pairs]

    def covered(f: float) -> int:
        return sum(math.exp(lo * f) * (1 - 1e-9) <= q <= math.exp(hi * f) * (1 + 1e-9)
                   for lo, hi, qs in prepared for q in qs)

    base = covered(1.0) / held
    for f in FACTORS:
        if covered(f) >= TARGET * held:
            return f, held, base
    return FACTORS[-1], held, base


def _split(results: list[Result], outer, inner) -> list[tuple[list[Result], list[Result]]]:
    """Per outer group, per inner group in it: (the outer group without the inner one, the inner one)."""
    pairs = []
    outer_groups: dict = {}
    for r in results:
        outer_groups.setdefault(outer(r), []).append(r)
    for members in outer_groups.values():
        inner_groups: dict = {}
        for r in members:
            inner_groups.setdefault(inner(r), []).append(r)
        if len(inner_groups) < 2:
            continue
        for key, held in inner_groups.items():
            pool = [r for r in members if inner(r) != key]
            if len(pool) >= MIN_ROWS:
                pairs.append((pool, held))
    return pairs


def _split_by_outer(results: list[Result], outer, inner) -> dict:
    """_split per outer group: {outer key: its (pool, held-out) pairs}."""
    groups: dict = {}
    for r in results:
        groups.setdefault(outer(r), []).append(r)
    return {key: pairs for key, members in sorted(groups.items()) if (pairs := _split(members, outer, inner))}


def _derived_peak(rs: list[Result], coverage: float) -> dict:
    """The derived-peak factor per (kind, engine), calibrated on that pair's rows alone and within a device class (the
    factor widens a cell's range, so a class's published-peak rows must cover its derived-peak rows, and back: an
    engine's published rows pooled over every class are as wide as its worst class and cover an Apple cell's
    derived rows without saying how a derived peak errs). `factor`, what a pair with fewer than MIN_HELD_OUT held-out
    rows takes, is the widest calibrated factor and never less than FALLBACK_FACTOR (never narrower by default)."""
    kinds = [r for r in rs if r.context.kind in DERIVED_PEAK_CALIBRATED]
    by_pair: dict = {}
    for (kind, engine, _), pairs in _split_by_outer(kinds, lambda r: (r.context.kind, r.context.engine,
                                                                      r.context.device_class),
                                                    lambda r: r.context.derived_peak).items():
        by_pair.setdefault((kind, engine), []).extend(pairs)
    per: dict = {}
    for (kind, engine), pairs in sorted(by_pair.items()):
        factor, held, base = _calibrate(pairs, coverage)
        if held >= MIN_HELD_OUT:
            per.setdefault(kind, {})[engine] = {"factor": factor, "held_out": held, "inside_unwidened": round(base, 3)}
    calibrated = [p["factor"] for e in per.values() for p in e.values()]
    widest = max([*calibrated, FALLBACK_FACTOR])
    names = ", ".join(f"{k} {e} x{p['factor']:g} ({p['held_out']})" for k, es in per.items() for e, p in es.items())
    how = (f"calibrated per (kind, engine) within a device class: the smallest factor at which that pair's rows on "
           f"devices with published peaks cover its rows on derived peaks of the same class (and back) at "
           f"{TARGET:.0%}; pools of at least {MIN_ROWS} rows, {MIN_HELD_OUT} held-out rows a pair")
    basis = (f"{how} ({names}); any other pair takes the widest, x{widest:g} (never less than the stated "
             f"{FALLBACK_FACTOR})" if calibrated else
             f"stated: {how}, and no pair has them, so every pair takes {FALLBACK_FACTOR}, a judgment")
    return {"factor": widest, "basis": basis, "pairs": per}


def widening(results: list[Result], coverage: float = COVERAGE) -> dict:
    rs = calibrating(results)
    kind, engine = (lambda r: r.context.kind), (lambda r: (r.context.kind, r.context.engine))
    cell = lambda r: (r.context.kind, r.context.engine, r.context.device_class)  # noqa: E731
    specs = {
        "device_class": (_split(rs, engine, lambda r: r.context.device_class),
                         "an engine's rows on the other device classes cover a class left out"),
        "engine": (_split(rs, kind, lambda r: r.context.engine),
                   "every other engine's rows cover an engine left out"),
        "architecture": (_split(rs, cell, lambda r: r.context.model_type),
                         "a cell's rows on other architectures cover an architecture left out"),
    }
    out = {}
    for name, (pairs, how) in specs.items():
        factor, held, base = _calibrate(pairs, coverage)
        basis = (f"calibrated: the smallest factor at which {how} at {TARGET:.0%} ({held} held-out rows; "
                 f"{base:.0%} inside without widening)" if held >= MIN_HELD_OUT else
                 f"stated: only {held} held-out rows to calibrate on, the factor {FALLBACK_FACTOR} is a judgment")
        if name == "engine" and factor < ENGINE_FLOOR:
            basis += (f"; raised to {ENGINE_FLOOR} (stated floor: an engine never measured may differ from the "
                      "measured ones more than they differ from each other)")
            factor = ENGINE_FLOOR
        out[name] = {"factor": factor, "basis": basis}
    out["derived_peak"] = _derived_peak(rs, coverage)
    out["release"] = {"factor": RELEASE_FACTOR, "basis": "stated: an engine release no row of the pool ran (a row "
                      "naming none counts as the current release); too few rows name releases to calibrate it"}
    return out


NO_ROW = (0.5, 2.0)
"""The default of a table built from no row of any rate kind (a subset of the rows): half to twice the typical."""


def defaults(results: list[Result], factors: dict, coverage: float = COVERAGE) -> dict:
    out = {}
    rs = calibrating(results)
    for kind, (kinds, extra, basis) in DEFAULT_RULES.items():
        ratios = [ratio(r) for r in rs if r.context.kind in kinds]
        low, high = quantiles(ratios, coverage) if len(ratios) >= MIN_KIND_ROWS else NO_ROW
        f = float(factors["engine"]["factor"]) if extra is None else extra
        out[kind] = {"low": round(math.exp(math.log(low) * f), 4), "high": round(math.exp(math.log(high) * f), 4),
                     "basis": basis}
    return out


def build(results: list[Result], *, command: str, commit: str, coverage: float = COVERAGE) -> dict:
    fams = families()
    table_cells = cells(results, coverage, fams)
    factors = widening(results, coverage)
    rs = calibrating(results)
    return {
        "generated": date.today().isoformat(),
        "command": command,
        "rows_commit": commit,
        "rows": len(rs),
        "bound_rows": len(usable(results)) - len(rs),
        "source": "out-of-sample (leave-one-source-out) errors of the published rows of tests/validation/*.yaml, "
                  "each the sizeup command line of its source's conditions (benchmarks/validation/)",
        "retrieved": date.today().isoformat(),
        "coverage": coverage,
        "min_rows": MIN_ROWS,
        "min_kind_rows": MIN_KIND_ROWS,
        "method": __doc__.strip().replace("\n", " "),
        "widening": factors,
        "defaults": defaults(results, factors, coverage),
        "families": fams,
        "cells": table_cells,
    }


def width(low: float, high: float) -> float:
    return high / low


def _judge(pairs: Iterable[tuple[Result, dict]]) -> dict[str, tuple[Result, bool, float]]:
    """Per row id: (the result, inside the range its table gives it, that range's width high / low)."""
    from sizeup.price.ranges_table import lookup

    out = {}
    for r, table in pairs:
        c = r.context
        b = lookup(table, c.kind, engine=c.engine, device_class=c.device_class, model_type=c.model_type,
                   derived_peak=c.derived_peak, release=c.release)
        out[r.row.id] = (r, within(r, b.low_ratio, b.high_ratio), width(b.low_ratio, b.high_ratio))
    return out


def per_kind(judged: dict[str, tuple[Result, bool, float]]) -> dict[str, dict]:
    out: dict[str, list] = {}
    for r, inside, w in judged.values():
        out.setdefault(r.context.kind, []).append((inside, w))
    return {k: {"rows": len(v), "inside": sum(i for i, _ in v) / len(v),
                "median_width": statistics.median(w for _, w in v)} for k, v in sorted(out.items())}


def coverage_and_width(results: list[Result], table: dict) -> dict[str, dict]:
    """Per kind: the share of rows inside the range `table` gives them, and the median width (high / low)."""
    return per_kind(_judge((r, table) for r in usable(results)))


def loso_judged(results: list[Result], coverage: float = COVERAGE) -> dict[str, tuple[Result, bool, float]]:
    """Each usable row judged by a table built without its own source (its cells, factors and defaults): the nearest
    this data comes to rows never seen."""
    rs = usable(results)
    pairs = []
    for source in sorted({r.row.source for r in rs}):
        table = build([r for r in rs if r.row.source != source], command="", commit="", coverage=coverage)
        pairs += [(r, table) for r in rs if r.row.source == source]
    return _judge(pairs)


def loso_coverage(results: list[Result], coverage: float = COVERAGE) -> dict[str, dict]:
    """Per kind: coverage and median width with each source judged by a table built without it."""
    return per_kind(loso_judged(results, coverage))
