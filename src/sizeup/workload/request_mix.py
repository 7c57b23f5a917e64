"""Request lengths of a served load: a mix's mean input and output tokens, their spreads and a benchmark's
beam width, from flags or from a named benchmark dataset (data/workload/datasets.yaml, each with its source)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sizeup.errors import CatalogError, ConfigError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml

__all__ = ["RequestMix", "dataset_mix", "dataset_names"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestMix:
    """Request lengths: mean input and output tokens, their standard deviations, and where they came from."""

    input_tokens: int
    output_tokens: int
    input_spread: float | None = None
    output_spread: float | None = None
    beams: int = 1
    """Beam-search width: each request decodes this many sequences (its prompt's cache shared by them) and returns
    the best one's `output_tokens`."""
    source: str = "--prompt / --output"
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 1 <= self.beams <= 64:
            raise ConfigError(f"beam width {self.beams}: expected 1 to 64 sequences per request")
        if self.input_tokens < 1 or self.output_tokens < 1:
            raise ConfigError(f"request lengths {self.input_tokens} in / {self.output_tokens} out: a served request "
                              f"needs at least 1 input and 1 output token")
        for name, value in (("--input-len-spread", self.input_spread), ("--output-len-spread", self.output_spread)):
            if value is not None and not (0 <= value < 1e7):
                raise ConfigError(f"{name} {value}: expected a standard deviation of 0 or more tokens")


@lru_cache(maxsize=1)
def _datasets() -> dict[str, dict]:
    path = builtin_data_dir() / "workload" / "datasets.yaml"
    data = read_yaml(path)
    table = data.get("datasets") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise CatalogError(f"{path}: expected a mapping 'datasets'")
    for name, entry in table.items():
        if not isinstance(entry, dict) or not entry.get("source") or not entry.get("input_mean") \
                or not entry.get("output_mean"):
            raise CatalogError(f"{path}: dataset {name!r} needs input_mean, output_mean and a source")
    return table


def dataset_names() -> list[str]:
    return sorted(_datasets())


def dataset_mix(name: str, *, input_tokens: int | None = None, output_tokens: int | None = None,
                input_spread: float | None = None, output_spread: float | None = None) -> RequestMix:
    """The request lengths of benchmark dataset `name` (data/workload/datasets.yaml); a length given explicitly
    replaces the dataset's."""
    entry = _datasets().get(str(name).strip().lower())
    if entry is None:
        raise ConfigError(f"--dataset {name!r}: expected one of {', '.join(dataset_names())}")
    notes = [f"--dataset {name}: {entry.get('description', '')}; mean {entry['input_mean']} input / "
             f"{entry['output_mean']} output tokens ({entry.get('basis', '')})"]
    if entry.get("beams"):
        notes.append(f"--dataset {name}: beam search of width {entry['beams']} ({entry.get('beams_basis', '')}): each "
                     f"request decodes {entry['beams']} sequences, their prompt's KV cache shared")
    if entry.get("input_derived") and input_tokens is None:
        notes.append(f"--dataset {name}: the mean input length is not published; derived as its basis says "
                     f"(give --prompt N to set it)")
    return RequestMix(input_tokens=input_tokens or int(entry["input_mean"]),
                      output_tokens=output_tokens or int(entry["output_mean"]),
                      input_spread=input_spread if input_spread is not None else entry.get("input_spread"),
                      output_spread=output_spread if output_spread is not None else entry.get("output_spread"),
                      beams=int(entry.get("beams") or 1), source=f"--dataset {name}", notes=tuple(notes))
