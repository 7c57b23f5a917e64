"""Ollama (engines/ollama.py): its default context by release and GPU memory, its default tag."""

from types import SimpleNamespace

from sizeup import api
from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog


def test_num_ctx_by_release_and_memory():
    cat = load_catalog()
    arch = SimpleNamespace(max_context=131072)  # llama-3.1-8b
    for version, device, want in (("0.5.0", "rtx-4090", 2048), ("0.6.7", "rtx-4090", 4096),
                                  ("0.15.5", "rtx-4060-ti-16gb", 4096), ("0.15.5", "rtx-4090", 32768)):
        assert resolve(f"ollama@{version}", cat.device(device)).default_context(arch)[0] == want


def test_default_tag_is_q4_k_m():
    est = api.estimate("llama-3.1-8b", device="rtx-4090", engine="ollama@0.6.7", prompt=100, output=100)
    assert est.weights.id == "q4_k_m"
    assert est.memory.kv_cache_bytes == 4096 * 131072  # 4096 tokens x 32 layers x 8 KV heads x 128 x 2 x fp16
