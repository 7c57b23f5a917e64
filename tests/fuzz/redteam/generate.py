"""All hostile cases of one seed, by generator: each writes its files under its own folder and returns the cases."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from tests.fuzz.redteam import cli_cases, data_cases, load_cases, model_cases
from tests.fuzz.redteam.common import write
from tests.fuzz.redteam.runner import Case

GENERATORS = {
    "gguf": model_cases.gguf_cases,
    "safetensors": model_cases.safetensors_cases,
    "onnx": model_cases.onnx_cases,
    "config": model_cases.config_cases,
    "catalog": data_cases.catalog_cases,
    "scenario": data_cases.scenario_cases,
    "flags": cli_cases.flag_cases,
    "paths": lambda rng, folder: cli_cases.path_cases(
        rng, folder, write(folder / "ok-result.json", cli_cases._result("m", "l")), model_cases._chain(3)),
    "store": cli_cases.store_cases,
    "sweep": cli_cases.sweep_cases,
    "load": load_cases.load_cases,
    "misc": cli_cases.misc_cases,
    "changing": cli_cases.changing_cases,
}


def generate(seed: int, folder: Path, only: set[str] = frozenset()) -> Iterator[tuple[Case, Path]]:
    for name, generator in GENERATORS.items():
        if only and name not in only:
            continue
        where = folder / name
        where.mkdir(parents=True, exist_ok=True)
        for case in generator(random.Random(f"{seed}:{name}"), where):
            yield case, where
