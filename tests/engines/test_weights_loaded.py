"""An engine refuses weights it cannot load (ExecutionModel.LOADS), so neither an estimate nor a plan runs Ollama
or llama.cpp on fp8 / AWQ checkpoints (they read GGUF files only)."""

import pytest

from sizeup.cli.main import main
from sizeup.errors import ConfigError
from sizeup.engines.base import engine_class
from sizeup.formats import get_format


@pytest.mark.parametrize("engine", ["llama.cpp", "ollama"])
@pytest.mark.parametrize("quant", ["fp8", "awq-int4", "gptq-int4", "nvfp4"])
def test_gguf_engines_refuse_checkpoints_they_cannot_read(engine, quant):
    with pytest.raises(ConfigError, match=f"--quant {quant}: {engine} cannot load"):
        engine_class(engine).check_weights(get_format(quant))


@pytest.mark.parametrize("quant", ["q4_k_m", "q8_0", "f16", "bf16", "mxfp4"])
def test_gguf_engines_load_gguf_types_and_gpt_oss_mxfp4(quant):
    for engine in ("llama.cpp", "ollama"):
        engine_class(engine).check_weights(get_format(quant))


def test_an_engine_without_a_list_loads_any_format():
    engine_class("vllm").check_weights(get_format("awq-int4"))


def test_the_cli_refuses_in_one_line(capsys):
    assert main(["estimate", "llama-3.1-8b", "--device", "l4", "--engine", "ollama", "--quant", "fp8"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "ollama cannot load fp8" in err and "gguf" in err


def test_a_plan_rejects_the_families_an_engine_cannot_load(tmp_path, capsys):
    scenario = tmp_path / "api.yaml"
    scenario.write_text("""name: api
model: llama-3.1-8b
task: api
traffic: {users: 50, requests_per_user_per_hour: 12, prompt_tokens: {mean: 1200}, output_tokens: {mean: 300}}
sla: {ttft_p95_s: 1.5, tpot_p95_s: 0.06}
constraints:
  devices: [l4]
  providers: [gcp]
  engines: [ollama, llama.cpp]
  quantizations: [fp8, awq-int4]
""")
    assert main(["plan", str(scenario)]) != 0  # nothing those engines can load is allowed
    out = capsys.readouterr()
    assert "cannot load fp8" in out.out + out.err and "cannot load awq-int4" in out.out + out.err
