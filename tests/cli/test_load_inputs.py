"""Bad load flags of `sizeup estimate` (a code review): each is one line naming the value and what was expected, exit
code 1, never a traceback."""

from __future__ import annotations

import pytest

from sizeup.cli.main import main

BASE = ["estimate", "llama-3.1-8b", "--device", "h100-sxm-80gb", "--engine", "vllm"]


@pytest.mark.parametrize("flags, message", [
    (["--concurrency", "64", "--batcher-window", "0.3"],
     "--batcher-window 0.3: needs --rps R (a front end batching Poisson arrivals), not --concurrency 64"),
    (["--concurrency", "inf", "--batcher-window", "0.3"],
     "--batcher-window 0.3: needs --rps R (a front end batching Poisson arrivals), not --concurrency inf"),
    (["--rps", "5", "--batcher-max", "8"], "--batcher-max 8: needs --batcher-window S"),
    (["--rps", "5", "--batcher-window", "abc"], "--batcher-window abc: expected a positive number <= 3,600 seconds"),
    (["--rps", "abc"], "--rps abc: expected a number"),
    (["--engine-opt", "offline", "--rps", "5"], "--rps 5: the offline entry point (--engine-opt offline"),
    (["--engine-opt", "offline=-5"],
     "--engine-opt 'offline=-5': offline is a switch; expected offline, offline=1 or offline=0"),
    (["--engine-opt", "offline=2"], "--engine-opt 'offline=2': offline is a switch"),
    (["--engine-opt", "v1=7"], "--engine-opt 'v1=7': v1 is a switch; expected v1, v1=1 or v1=0"),
])
def test_a_bad_load_flag_is_one_line_naming_its_value(capsys, flags, message):
    assert main([*BASE, *flags]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_switches_still_take_their_bare_and_0_or_1_forms(capsys):
    for opt in ("offline", "offline=1", "offline=0", "v1=0"):
        assert main([*BASE, "--engine-opt", opt, "--json"]) == 0, opt
        capsys.readouterr()


@pytest.mark.parametrize("engine, option", [("vllm", "max-num-seqs"), ("sglang", "max-running-requests")])
def test_an_offline_entry_point_refuses_a_concurrency_naming_its_batch_cap(capsys, engine, option):
    # vLLM's LLM class and SGLang's offline engine take every prompt in one call: no clients keep N in flight, the
    # scheduler's own cap bounds the batch (vLLM max_num_seqs, SGLang max_running_requests)
    args = ["estimate", "llama-3.1-8b", "--device", "h100-sxm-80gb", "--engine", engine, "--engine-opt", "offline"]
    assert main([*args, "--concurrency", "64"]) == 1
    err = capsys.readouterr().err
    assert (f"--concurrency 64: the offline entry point (--engine-opt offline: every prompt handed over in one call) "
            f"has no clients to keep 64 requests in flight; to cap its batch give --engine-opt {option}=64 with "
            f"--concurrency inf" in err) and err.count("\n") == 1 and "Traceback" not in err
    assert main([*args, "--engine-opt", f"{option}=64", "--concurrency", "inf", "--json"]) == 0
    capsys.readouterr()


def test_an_in_process_entry_point_that_takes_requests_as_they_come_keeps_its_concurrency(capsys):
    # TensorRT-LLM's --engine-opt offline (trtllm-bench, the LLM API) has no arrival process of its own to refuse
    assert main(["estimate", "llama-3.1-8b", "--device", "h100-sxm-80gb", "--engine", "tensorrt-llm", "--quant", "fp8",
                 "--engine-opt", "offline", "--concurrency", "64", "--json"]) == 0
    capsys.readouterr()



@pytest.mark.parametrize("engine", ["vllm", "sglang", None])
def test_an_offline_entry_point_given_a_dataset_is_loaded_all_at_once_and_says_so(capsys, engine):
    # its only load is every prompt handed over in one call (--concurrency inf): implied, not refused with the
    # --concurrency N / --rps it would then refuse (None: the H100 class's engine, vLLM, data/engines/defaults.yaml)
    args = ["estimate", "llama-3.1-8b", "--device", "h100-sxm-80gb", *(["--engine", engine] if engine else []),
            "--engine-opt", "offline", "--dataset", "sharegpt", "--num-prompts", "1000"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert ("--dataset with --engine-opt offline: priced as --concurrency inf, every prompt handed over in one call"
            in out) and "every request queued at once" in out
    assert main([*args[:-4], "--batcher-window", "0.3"]) == 1
    err = capsys.readouterr().err
    assert "--batcher-window 0.3: batches arrivals (--rps), and the offline entry point" in err
    assert err.count("\n") == 1


def test_a_served_engine_given_a_dataset_alone_still_asks_for_its_load(capsys):
    # TensorRT-LLM's in-process run takes --concurrency N and --rps: nothing to imply
    assert main(["estimate", "llama-3.1-8b", "--device", "h100-sxm-80gb", "--engine", "tensorrt-llm", "--engine-opt",
                 "offline", "--dataset", "sharegpt"]) == 1
    assert "give --concurrency N|inf or --rps R with it" in capsys.readouterr().err
