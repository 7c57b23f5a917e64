"""The fms-hf-tuning profile (data/training/frameworks.yaml): IBM's tuning library, TRL's SFTTrainer before 1.6 with
the fms-acceleration plugins, for a user who states it. The fms-acceleration rows keep `--framework trl` (fms-hf-tuning's
baseline is TRL's SFTTrainer; keying them apart left TRL's one-GPU cells without rows)."""

from sizeup.workload.frameworks import framework_for, get_framework


def test_the_profile_states_what_fms_hf_tuning_runs():
    fw = get_framework("fms-hf-tuning")
    # tuning/config/configs.py use_flash_attn=True; trl<0.20 pinned: transformers' upcast loss; peft_config.py 0.05
    assert fw.get("attention") == "flash2" and fw.get("loss") == "upcast" and fw.get("lora_dropout") == 0.05
    assert fw.get("kbit_fp32_params") is True  # PEFT's own prep through SFTTrainer; the plugin's: --no-kbit-upcast
    assert fw.get("recompute") is None and fw.get("packing") is None  # its defaults: off (the benchmark's flags)
    assert not fw.default_for and framework_for(None, "qlora")[0] == "trl"  # never the default
