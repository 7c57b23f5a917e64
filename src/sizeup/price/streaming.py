"""What a step of many tokens pays beyond max(weight read, compute): matrix products near their ridge point.

A server's step multiplies every weight matrix by the step's M tokens (its decodes and the prompt tokens it
carries). Per op the roofline (price/roofline.py) takes max(read, compute): the weights stream in while the
tensor cores work on what arrived. Measured linear layers overlap the two only in part where they are of a size
(M from about a quarter to eight times the ridge point: the hundreds to low thousands of tokens of a loaded
server's step): their time is (R^p + C^p)^(1/p) for the weight read R and the compute C, p from
data/efficiency/streaming.yaml (vidur's H100 / A100 profiles, p 1.33: at C = R, 1.68 R instead of R). Far from
the ridge the excess vanishes (at C = R / 100 or 100 R it is under 0.3% of the step), so single-sequence decode
and long prefills keep their price.
"""

from __future__ import annotations

from functools import lru_cache

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.ranges import Range, parse_entry

__all__ = ["overlap_exponent", "excess", "step_excess", "note"]

_CORNER = {"low": "high", "typical": "typical", "high": "low"}
"""A step's fast corner ('low' time) takes the largest exponent (the most overlap), the slow corner the least."""


@lru_cache(maxsize=1)
def _exponent() -> tuple[Range, str]:
    path = builtin_data_dir() / "efficiency" / "streaming.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict) or set(data) != {"overlap_exponent"}:
        raise CatalogError(f"{path}: expected exactly one field 'overlap_exponent'")
    p, source = parse_entry(data["overlap_exponent"], path, "overlap_exponent", False)
    if p.low < 1:
        raise CatalogError(f"{path}: overlap_exponent.low = {p.low}: expected at least 1 (1: no overlap at all)")
    return p, source


def overlap_exponent() -> tuple[Range, str]:
    """(the exponent p of (R^p + C^p)^(1/p), its source)."""
    return _exponent()


def excess(read_s: float, compute_s: float, corner: str) -> float:
    """Seconds a matrix product with weight read `read_s` and compute `compute_s` takes beyond max of the two, at
    the `corner` ('low' / 'typical' / 'high' time) of the exponent's range; 0 where either is 0."""
    if read_s <= 0 or compute_s <= 0:
        return 0.0
    p = getattr(_exponent()[0], _CORNER[corner])
    big, small = max(read_s, compute_s), min(read_s, compute_s)
    return big * ((1.0 + (small / big) ** p) ** (1.0 / p) - 1.0)


def step_excess(read_s: float, per_token_s: float, decodes: float, prompt_tokens: float, lump: float,
                corner: str) -> float:
    """The mean `excess` of a server's step of `decodes` sequences that carries `prompt_tokens` prompt tokens a step
    on average, in lumps of `lump` tokens (a whole prompt, or its chunk where a step's token budget is smaller):
    fewer than a lump a step means that share of the steps carries one lump and the others none, so a light load's
    rare prompts are priced in the step that runs them (past the ridge) rather than spread thinly over every step
    (near it). `read_s`: the weight read; `per_token_s`: one token's compute."""
    share = min(prompt_tokens / lump, 1.0) if prompt_tokens > 0 and lump > 0 else 0.0
    plain = excess(read_s, decodes * per_token_s, corner)
    if share == 0.0:
        return plain
    loaded = excess(read_s, (decodes + max(prompt_tokens, lump)) * per_token_s, corner)
    return (1 - share) * plain + share * loaded


def note() -> str:
    """The assumption line an estimate under load states."""
    p, source = _exponent()
    return (f"a step of M tokens takes (R^p + C^p)^(1/p) for its weight read R and its tokens' compute C, not "
            f"max(R, C): measured linear layers overlap the two only in part near the ridge point (p {p.typical:g}, "
            f"{p.low:g}-{p.high:g}; 1 is no overlap), fitted: {source}; price/streaming.py")
