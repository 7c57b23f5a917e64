"""Backend comparison on the CPU with real small models."""

import pytest

torch = pytest.importorskip("torch")

from sizeup.api import ParsedInput  # noqa: E402
from sizeup.errors import MeasureError  # noqa: E402
from sizeup.examples import zoo  # noqa: E402
from sizeup.measure.backends import compare_backends  # noqa: E402
from sizeup.measure.harness import TimingPolicy  # noqa: E402

FAST = TimingPolicy(warmup=1, min_repetitions=3, max_repetitions=8, point_budget_s=0.5)


def test_convnet_eager_channels_last_and_onnxruntime_agree():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    results = compare_backends(zoo.c2f, [ParsedInput(shape=(1, 64, 16, 16))], 2,
                               ["eager", "channels_last", "onnxruntime"], policy=FAST)
    by = {r.backend: r for r in results}
    assert all(r.status == "ok" and r.samples_s for r in results), [r.error for r in results]
    assert by["channels_last"].max_abs_diff < 1e-3 and by["onnxruntime"].max_abs_diff < 1e-3
    assert by["onnxruntime"].setup_s > 0


def test_transformer_without_a_4d_input_skips_channels_last():
    results = compare_backends(zoo.llama_block, [ParsedInput(shape=(1, 32, 512))], 1, ["eager", "channels_last"],
                               policy=FAST)
    assert results[0].status == "ok" and results[1].status == "unsupported"


@pytest.mark.slow
def test_torch_compile_matches_eager():
    results = compare_backends(zoo.c2f, [ParsedInput(shape=(1, 64, 16, 16))], 1, ["eager", "compile"], policy=FAST)
    assert results[1].status == "ok" and results[1].max_abs_diff < 1e-3 and results[1].setup_s > 0


def test_unknown_backend():
    with pytest.raises(MeasureError, match="unknown backend 'tensorrt'"):
        compare_backends(zoo.c2f, [ParsedInput(shape=(1, 64, 8, 8))], 1, ["tensorrt"])
