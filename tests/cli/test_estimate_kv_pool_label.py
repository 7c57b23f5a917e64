"""The estimate names the engine whose KV pool it sizes (it printed "vLLM KV pool" for every engine)."""

from sizeup.cli.main import main


def test_kv_pool_line_names_the_engine(capsys):
    assert main(["estimate", "llama-3.1-8b", "--device", "h100-sxm-80gb", "--engine", "tensorrt-llm"]) == 0
    pool = [x for x in capsys.readouterr().out.splitlines() if "KV pool holds" in x]
    assert len(pool) == 1 and pool[0].startswith("tensorrt-llm ") and "vLLM" not in pool[0]


def test_vllm_pool_keeps_its_name(capsys):
    assert main(["estimate", "llama-3.1-8b", "--device", "h100-sxm-80gb", "--engine", "vllm"]) == 0
    assert any(x.startswith("vllm ") and "KV pool holds" in x for x in capsys.readouterr().out.splitlines())
