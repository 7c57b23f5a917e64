"""The fms-hf-tuning profile (data/training/frameworks.yaml): IBM's tuning library, TRL's SFTTrainer before 1.6 with
the fms-acceleration plugins; its published rows (fms-acceleration's A100 references) are keyed by it, not by TRL's."""

from sizeup.price.ranges_table import training_key
from sizeup.workload.frameworks import framework_for, get_framework
from tests.validation.bench import _rows, runner


def test_the_profile_states_what_fms_hf_tuning_runs():
    fw = get_framework("fms-hf-tuning")
    # tuning/config/configs.py use_flash_attn=True; trl<0.20 pinned: transformers' upcast loss; peft_config.py 0.05
    assert fw.get("attention") == "flash2" and fw.get("loss") == "upcast" and fw.get("lora_dropout") == 0.05
    assert fw.get("kbit_fp32_params") is True  # PEFT's own prep through SFTTrainer; the plugin's: --no-kbit-upcast
    assert fw.get("recompute") is None and fw.get("packing") is None  # its defaults: off (the benchmark's flags)
    assert not fw.default_for and framework_for(None, "qlora")[0] == "trl"  # never the default


def test_the_fms_acceleration_rows_run_its_profile_and_key_apart_from_trl():
    rows = [r for r in _rows.load_file(_rows.ROW_DIR / "finetune_measurements.yaml") if r.source == "fms-acceleration"]
    assert len(rows) >= 400
    for r in rows:
        argv = r.argv
        assert argv[argv.index("--framework") + 1] == "fms-hf-tuning", r.id
    one = next(r for r in rows if r.id == "fms-main-csv-mistral-7b-v0.1-qlora-baseline-peft-bnb-1gpu-b4-peak")
    assert runner.context(one).engine == training_key("fms-hf-tuning", "qlora") == "fms-hf-tuning/qlora"
    two = next(r for r in rows if r.id == "fms-main-csv-mistral-7b-v0.1-qlora-baseline-peft-bnb-2gpu-b2-peak")
    assert runner.context(two).engine == "fms-hf-tuning/qlora/multi-gpu"
