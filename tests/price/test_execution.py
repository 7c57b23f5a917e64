"""The note that says which kernel priced a phase (price/execution.py phase_note) carries what its basis derived."""

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.price.execution import DERIVED_CHARS, derived_text
from sizeup.workload.inference import InferenceConfig, estimate_inference


@pytest.mark.parametrize("basis,said", [
    ("plain tuned row, 0.54 of the bandwidth", None),
    ("key.hbm (derived: the hopper figure x 1.108) (derived: no tuned row on gddr, the hbm figure)",
     "(derived: the hopper figure x 1.108; no tuned row on gddr, the hbm figure)"),
    ("DERIVED: the GB10 figure (same generation). high: a read kernel", "(derived: the GB10 figure (same generation))"),
    ("W7800 pp512 0.238 of the peak (one tuned row; low/high +-25%, derived)", "(derived: one tuned row; low/high +-25%)"),
    ("as rdna3 (derived)", "(derived: as rdna3)"),
    ("without a tuned row: the RDNA4 fraction (derived; issue #1 reports 43%)",
     "(derived: without a tuned row: the RDNA4 fraction)"),
    ("no tuned row: median of the classes above; derived", "(derived: no tuned row: median of the classes above)"),
])
def test_derived_text_reads_each_way_a_basis_says_derived(basis, said):
    assert derived_text(basis) == said


def test_derived_text_is_short():
    said = derived_text("x (derived: " + "word " * 60 + ")")
    assert said.endswith("...)") and len(said) <= DERIVED_CHARS + len("(derived: )")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


def _notes(catalog, model, device, engine, weights):
    cfg = InferenceConfig(batch=1, prompt=512, output=128, weights=weights, engine=engine)
    e = estimate_inference(load_model(model), catalog.device(device), cfg, limits=False)
    return [a for a in e.assumptions if "priced with" in a]


def test_a_derived_kernel_figure_reaches_the_estimate_on_one_line(catalog):
    # torch-compile's 16-bit GEMV on an A100: the H100 fit x the weight-only ratio of the two (derived, its basis)
    decode = next(n for n in _notes(catalog, "llama-2-7b", "a100-sxm-80gb", "torch-compile", "bf16")
                  if n.startswith("decode"))
    assert "memory at 69% of peak bandwidth (derived: the hopper figure x 1.108" in decode
    # llama.cpp on a Jetson AGX Thor: the LPDDR5X share is the GB10's (derived in kernels.yaml)
    thor = _notes(catalog, "llama-3.1-8b", "jetson-agx-thor", "llama.cpp", "q4_k_m")
    assert any("(derived: the GB10 figure" in n for n in thor)
    assert all("\n" not in n and len(n) < 320 for n in [decode, *thor])
    # a tuned row says nothing derived
    h100 = _notes(catalog, "llama-2-7b", "h100-sxm-80gb", "torch-compile", "bf16")
    assert h100 and not any("derived" in n for n in h100)
