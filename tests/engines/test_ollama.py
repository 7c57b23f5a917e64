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
    est = api.estimate("llama-3.1-8b", device="rtx-4090", engine="ollama", prompt=100, output=100)
    assert est.weights.id == "q4_k_m"
    # 0.15.5 on 24 GiB: num_ctx 32768, one slot (PR 11330); 32 layers x 8 KV heads x 128 x 2 x fp16 = 131072 B a token
    assert est.memory.kv_cache_bytes == 32768 * 131072


def test_num_parallel_by_release_falls_back_to_one_slot_when_the_model_would_not_fit_whole():
    """server/sched.go: 4 slots from v0.2.0 (PR 4218), 2 from v0.6.7 (PR 10468), each falling back to 1 where the
    default's cache keeps the model off the GPU in part; 1 from PR 11330 (v0.9.6 here)."""
    def cache_tokens(version):
        est = api.estimate("llama-3.1-8b", device="rtx-4090", engine=f"ollama@{version}", prompt=100, output=100)
        return est.memory.kv_cache_needed_bytes // 131072  # llama-3.1-8b's f16 KV bytes a token

    assert cache_tokens("0.1.30") == 2048  # one slot x 2048
    assert cache_tokens("0.3.0") == 4 * 2048
    assert cache_tokens("0.6.7") == 2 * 4096
    assert cache_tokens("0.9.6") == 4096
    est = api.estimate("llama-2-70b", device="rtx-4090", engine="ollama@0.3.0", cpu="ryzen-7-8845hs", prompt=100,
                       output=100)
    assert "falls back to 1" in " ".join(est.assumptions)  # 39 GiB of weights never fit whole on 24 GiB


def _offload_note(est) -> str:
    return next((a for a in est.assumptions if " offload: " in a and a.startswith("ollama")), "")


def test_ollama_offloads_what_does_not_fit_from_free_memory():
    """Ollama's scheduler (llm/memory.go, llm/server.go) places whole layers from the last one down while they fit
    in free memory less its 457 MiB minimum and the graph: a 70B Q4_K_M (~39 GiB) on a 24 GiB card is split."""
    est = api.estimate("llama-2-70b", device="rtx-4090", engine="ollama", cpu="ryzen-7-8845hs", prompt=100, output=100)
    note = _offload_note(est)
    placed = int(note.split(" offload: ")[1].split(" of ")[0])
    assert 30 < placed < 60 and "of 80 layers on rtx-4090" in note and "457 MiB minimum" in note
    assert est.memory.fits  # the GPU holds only its share
    asked = api.estimate("llama-2-70b", device="rtx-4090", engine="ollama", cpu="ryzen-7-8845hs", prompt=100,
                         output=100, engine_options=(f"num_gpu={placed - 20}",))
    assert "num_gpu=" in " ".join(asked.assumptions)
    assert asked.decode.tokens_per_s.typical < est.decode.tokens_per_s.typical  # more layers on the CPU: slower


def test_ollama_keeps_everything_on_the_gpu_when_it_fits():
    est = api.estimate("llama-2-7b", device="rtx-4090", engine="ollama", prompt=100, output=100)
    assert _offload_note(est) == ""


def test_ollama_longer_context_leaves_fewer_layers_on_the_gpu():
    def placed(context):
        est = api.estimate("llama-3.1-8b", device="rtx-3060-12gb", engine="ollama", cpu="ryzen-7-8845hs", prompt=100,
                           output=100, context=context)
        note = _offload_note(est)
        return int(note.split(" offload: ")[1].split(" of ")[0]) if note else 32

    assert placed(65536) < placed(16384) <= 32
