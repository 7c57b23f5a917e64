"""TensorRT-LLM by release (data/engines/tensorrt-llm.yaml): 0.5-0.21 ran a TensorRT engine under the C++ runtime,
1.0 made the PyTorch backend the default (docs/source/release-notes.md of NVIDIA/TensorRT-LLM, Release 1.0)."""

from __future__ import annotations

import pytest

from sizeup.engines import parse_engine, resolve
from sizeup.engines.profile import engine_profile
from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog

H200 = load_catalog(include_user=False).device("h200-sxm-141gb")


@pytest.mark.parametrize("release", ["0.5.0", "0.9.0", "0.21.0", "1.0.0", "1.0.0rc4", "1.2.1"])
def test_the_releases_people_ran_resolve(release):
    assert parse_engine(f"tensorrt-llm@{release}").version == release
    assert resolve(f"trtllm@{release}", H200).label == f"tensorrt-llm {release}"


@pytest.mark.parametrize("text", ["tensorrt-llm@0.4", "tensorrt-llm@1.3", "trtllm@2.0.0"])
def test_an_undescribed_release_is_refused_in_one_line_naming_the_described_ones(text):
    with pytest.raises(ConfigError) as e:
        parse_engine(text)
    assert "sizeup's data describes tensorrt-llm releases 0.5 .. 1.2 (default 1.2)" in str(e.value)
    assert "\n" not in str(e.value)


def test_before_1_0_decode_enqueues_each_kernel_of_the_tensorrt_engine():
    """No CUDA graph by default in the TensorRT path (executor cudaGraphMode = false): a per-kernel enqueue from C++
    (2.6 / 4.0 / 6.4 us, the release's own figure: runtimes.tensorrt's whole-engine enqueue of a vision model moved to
    7.0 us and was not checked against these decode steps), several times the PyTorch backend's graph replay from 1.0 on."""
    old, new = resolve("tensorrt-llm@0.9.0", H200), resolve("tensorrt-llm@1.0.0", H200)
    enqueue = old.per_op_overhead(decode=True)
    assert (enqueue.low, enqueue.typical, enqueue.high) == pytest.approx((2.6e-6, 4.0e-6, 6.4e-6))
    assert enqueue.typical > 5 * new.per_op_overhead(decode=True).typical
    assert new.per_op_overhead(decode=True).typical == pytest.approx(5.0e-7)
    assert new.profile.notes == ()


def test_defaults_that_changed_by_release_follow_the_release_notes():
    # 0.8.0: freeGpuMemoryFraction 0.85 -> 0.9; 0.11.0: trtllm-build max_batch_size 256, 0.14.0: 2048
    assert engine_profile("tensorrt-llm", "0.5.0").value("kv_free_gpu_memory_fraction", 0) == 0.85
    assert engine_profile("tensorrt-llm", "0.8.0").value("kv_free_gpu_memory_fraction", 0) == 0.9
    assert engine_profile("tensorrt-llm", "0.12.0").value("max_batch_size", 0) == 256
    assert engine_profile("tensorrt-llm", "0.14.0").value("max_batch_size", 0) == 2048
    # 0.5's build.py: --use_custom_all_reduce off unless asked (NCCL); chosen at run time once 0.12 dropped the flag
    assert engine_profile("tensorrt-llm", "0.5.0").value("custom_all_reduce", 1) == 0
    assert engine_profile("tensorrt-llm", "1.0.0").value("custom_all_reduce", 0) == 1
    # 0.5's build kept a 16-bit KV cache unless built with --fp8_kv_cache; an FP8 checkpoint's from 1.0
    assert resolve("tensorrt-llm@0.5.0", H200).default_kv_dtype("fp8") is None
    assert resolve("tensorrt-llm@1.0.0", H200).default_kv_dtype("fp8")[0] == "fp8"


def test_a_setting_not_read_for_a_release_is_named_in_its_notes():
    notes = engine_profile("tensorrt-llm", "0.9.0").notes
    assert len(notes) == 1 and "step_overhead_s read for 1.0 on" in notes[0]
    assert "max_batch_size read for 0.5-0.7" in notes[0]
