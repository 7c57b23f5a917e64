"""No unbounded numbers: a device with no peak (published or derived) gives no tokens/s."""

from sizeup.api import estimate
from sizeup.hardware.catalog import load_catalog

# Measured llama.cpp Llama-3-8B prefill quoted in issue 17 (from published llama.cpp results):
# M3 Max 693 tok/s, RTX 3080 Ti 3,690 tok/s
MEASURED_PREFILL = {"apple-m3-max": 693.0, "rtx-3080-ti": 3690.0}


def unknown_device(folder):
    """A device whose file gives no peak and no architecture: its compute cannot be known."""
    (folder / "zz-mystery.yaml").write_text(
        "id: zz-mystery\nname: Mystery Card\nvendor: test\nkind: gpu\nmemory_gib: 24\nmemory_type: GDDR6\n"
        "memory_bandwidth_gb_per_s: 900\nsource: test\nretrieved: 2026-12-03\n")
    return folder


def test_unknown_compute_gives_no_speed(tmp_path):
    e = estimate("llama-3-8b", device="zz-mystery", engine="llama.cpp", quant="q4_k_m",
                 catalog=[unknown_device(tmp_path)])
    d = e.to_dict()
    assert d["prefill"]["tokens_per_s"] is None and d["prefill"]["ttft_s"] is None
    assert d["prefill"]["compute_known"] is False and d["prefill"]["latency_lower_bound_s"]["typical"] > 0
    assert d["decode"]["tokens_per_s"] is None and d["decode"]["per_sequence_tokens_per_s"] is None
    assert any("compute unknown" in a for a in d["assumptions"])


def test_derived_peaks_give_finite_sane_prefill():
    for device, measured in MEASURED_PREFILL.items():
        e = estimate("llama-3-8b", device=device, engine="llama.cpp", quant="q4_k_m")
        rate = e.prefill.tokens_per_s
        assert e.prefill.compute_priced
        # the old free-compute figures were 21x and 9x the measurement; the derived peak lands near it
        assert rate.low <= measured * 1.5 and measured / 3 <= rate.typical <= measured * 2, (device, rate)
        assert any("derived" in a for a in e.assumptions)


def test_no_device_in_the_catalog_is_priced_as_free_compute():
    from sizeup.ingest.hf_config import load_model
    from sizeup.workload.inference import InferenceConfig, estimate_inference

    arch = load_model("llama-3-8b")
    for device in load_catalog(include_user=False).devices.values():
        e = estimate_inference(arch, device, InferenceConfig(output=4), limits=False)
        if e.prefill.compute_priced:
            assert e.prefill.bound in ("compute", "memory", "overhead", "communication")
        else:
            assert e.prefill.tokens_per_s is None
