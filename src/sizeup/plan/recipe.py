"""The recipe on the sheet: the exact command lines that reproduce a plan's figures (`sizeup estimate …`,
`sizeup train …`, `sizeup roofline …`, each with the figure it prints), the engine command that serves one
replica with the plan's flags, and for jobs the training layout (TP × PP × DP, ZeRO stage, micro-batch,
accumulation, recomputation) with a launcher line."""

from __future__ import annotations

import shlex

from sizeup.errors import ConfigError
from sizeup.plan.sheet_types import Section

__all__ = ["recipe_section", "serving_estimate_args", "job_train_args", "job_layout"]

_HEADERS = ("step", "command line", "what it reproduces")


def recipe_section(result) -> Section | None:
    """The "Recipe" section of the sheet, or None when the plan has nothing to reproduce."""
    chosen = result.chosen or result.closest
    if chosen is None:
        return None
    task = result.scenario.task
    if task == "vision":
        rows = _vision(result, chosen)
    elif task == "edge":
        rows = _edge(result, chosen)
    elif "hours" in chosen.latency and task in ("finetune", "pretrain"):
        rows = _job(result, chosen)
    elif "hours" in chosen.latency:
        rows = _batch(result, chosen)
    else:
        rows = _serving(result, chosen)
    if result.scenario.source.endswith((".yaml", ".yml")):
        rows.append(("re-plan", _line(["sizeup", "plan", result.scenario.source]), "this sheet"))
    return Section(title="Recipe", table_headers=_HEADERS, table_rows=tuple(rows),
                   notes=("each sizeup line prints the figure beside it; the engine line serves one replica with the "
                          "plan's flags",))


def _line(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def _offer_flag(chosen) -> list[str]:
    """`--offer ID` where the offer's link matters (a multi-GPU replica or job), so the line prices it."""
    return ["--offer", chosen.offer.id] if chosen.offer is not None and chosen.gpus > 1 and not chosen.owned else []


def serving_estimate_args(scenario, chosen, batch: int) -> list[str]:
    """`sizeup estimate` of one replica of a serving plan at `batch` concurrent sequences."""
    traffic = scenario.traffic
    argv = ["sizeup", "estimate", scenario.model, "--device", chosen.device.id, "--engine", chosen.engine_ref,
            "--quant", chosen.quant, "--gpus", str(chosen.gpus), "--prompt", str(traffic.prompt_tokens),
            "--output", str(traffic.output_tokens), "--batch", str(batch)]
    if traffic.images:
        argv += ["--images", str(traffic.images)]
        if traffic.image_hw:
            argv += ["--image-size", f"{traffic.image_hw[0]}x{traffic.image_hw[1]}"]
    return argv + _offer_flag(chosen)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms" if seconds < 10 else f"{seconds:,.2f} s"


def _serving(result, chosen) -> list[tuple[str, str, str]]:
    from sizeup.plan.serving_files import engine_command

    scenario = result.scenario
    rows = []
    batches, steps = chosen.detail.get("decode_batches"), chosen.detail.get("decode_step_s")
    if batches:
        rows.append(("one replica, unloaded", _line(serving_estimate_args(scenario, chosen, 1)),
                     f"decode step {_ms(steps[0])} at batch 1"))
        rows.append(("one replica, full batch", _line(serving_estimate_args(scenario, chosen, batches[-1])),
                     f"decode step {_ms(steps[-1])} at batch {batches[-1]}"))
    try:
        command, args, ckpt = engine_command(result, chosen)
    except ConfigError as e:  # an engine whose server line sizeup does not list: the sheet says so, the plan stands
        rows.append(("serve one replica", "(no server command listed)", str(e)))
    else:
        rows.append(("serve one replica", _line(command + args), "the plan's engine flags"
                     + (f"; FILL IN the checkpoint ({ckpt.note})" if ckpt.placeholder else "")))
    plan, fleet = chosen.replicas, chosen.detail.get("fleet")
    if plan is not None:
        usable = plan.rate_per_replica * (1 - plan.headroom)
        where = (f", {fleet['per_instance']} per {chosen.offer.instance} ({chosen.detail.get('link', '')})"
                 if fleet and chosen.offer is not None else "")
        rows.append(("replicas", f"{chosen.detail.get('floor_replicas', plan.at_base)} to {plan.with_redundancy} "
                                 f"replicas{where}; scale out above {usable:.4g} req/s per replica",
                     "the cost section's fleet"))
    return rows


def job_train_args(scenario, chosen) -> list[str]:
    """`sizeup train` of a job plan at its layout and placement."""
    job, layout = scenario.job, chosen.detail["layout"]
    argv = ["sizeup", "train", scenario.model, "--device", chosen.device.id, "--method", job.method,
            "--gpus", str(chosen.gpus), "--nodes", str(layout["nodes"]), "--zero", str(layout["zero"]),
            "--micro-batch", str(layout["micro_batch"]), "--recompute", layout["recompute"], "--seq", str(job.seq),
            "--tokens", str(job.tokens)]
    if job.method in ("lora", "qlora", "dora"):
        argv += ["--rank", str(job.rank)]
    if job.global_batch:
        argv += ["--global-batch", str(job.global_batch)]
    return argv + (["--offer", chosen.offer.id] if chosen.offer is not None else [])


def job_layout(chosen) -> tuple[str, str] | None:
    """(the training layout in words, the torchrun line that launches it) of a job plan."""
    layout = chosen.detail.get("layout")
    if not layout:
        return None
    per_node = chosen.gpus // max(layout["nodes"], 1)
    text = (f"TP {layout['tp']} × PP {layout['pp']} × DP {layout['dp']} on {layout['nodes']} node"
            f"{'s' if layout['nodes'] > 1 else ''} of {per_node} GPU{'s' if per_node > 1 else ''}; ZeRO-{layout['zero']}"
            f"{' (FSDP full shard)' if layout['zero'] == 3 else ''}; micro-batch {layout['micro_batch']}, "
            f"{layout['grad_accumulation']} accumulation step{'s' if layout['grad_accumulation'] != 1 else ''} "
            f"(global batch {layout['global_batch']} sequences of {layout['seq']}); {layout['recompute']} "
            "activation recomputation")
    launch = _line(["torchrun", "--nnodes", str(layout["nodes"]), "--nproc-per-node", str(per_node)])
    if layout["nodes"] > 1:
        launch += " --rdzv-backend c10d --rdzv-endpoint $MASTER_ADDR:29500"  # the first node's address, set per run
    return text, launch + " YOUR_TRAIN_SCRIPT"


def _job(result, chosen) -> list[tuple[str, str, str]]:
    layout = job_layout(chosen)
    if layout is None:
        return []
    text, launch = layout
    return [("estimate", _line(job_train_args(result.scenario, chosen)),
             f"step {_ms(chosen.detail.get('step_s', 0.0))}, MFU {chosen.detail.get('mfu', 0.0):.1%}, "
             f"{chosen.latency['hours']:,.1f} h"),
            ("layout", text, "what the estimate prices"),
            ("launch", launch, "your script, with the layout above")]


def _batch(result, chosen) -> list[tuple[str, str, str]]:
    scenario = result.scenario
    traffic = scenario.traffic
    prompt, output = (traffic.prompt_tokens, traffic.output_tokens) if traffic else (512, 256)
    argv = ["sizeup", "estimate", scenario.model, "--device", chosen.device.id, "--engine", chosen.engine_ref,
            "--quant", chosen.quant, "--gpus", str(chosen.gpus), "--prompt", str(prompt), "--output", str(output),
            "--batch", str(chosen.max_batch)] + _offer_flag(chosen)
    return [("estimate", _line(argv), f"{chosen.detail.get('tokens_per_s', 0.0):,.0f} output tokens/s with prefill "
                                      "between batches")]


def _edge(result, chosen) -> list[tuple[str, str, str]]:
    scenario = result.scenario
    prompt, output = (scenario.traffic.prompt_tokens, scenario.traffic.output_tokens) if scenario.traffic else (256, 128)
    argv = ["sizeup", "estimate", scenario.model, "--device", chosen.device.id, "--engine", chosen.engine_ref,
            "--quant", chosen.quant, "--prompt", str(prompt), "--output", str(output)]
    derate = scenario.edge.thermal_derate if scenario.edge else 1.0
    rows = [("estimate", _line(argv), f"decode {_ms(chosen.latency['tpot'] * derate)} per token before the "
                                      f"×{derate:g} thermal derate ({_ms(chosen.latency['tpot'])} after)")]
    launch = _device_server(scenario, chosen, prompt + output)
    if launch is not None:
        server, ckpt = launch
        rows.append(("run on the device", _line([*server.command, *server.args]),
                     "the plan's format and context" + (f"; FILL IN the checkpoint ({ckpt.note})"
                                                        if ckpt.placeholder else "")))
    return rows


def _device_server(scenario, chosen, context: int):
    """(the engine's server line for one user at `context` tokens, its checkpoint) on an edge board; None where
    the engine lists no server (engines/launch.py)."""
    from sizeup.engines.base import resolve
    from sizeup.engines.launch import LaunchRequest
    from sizeup.plan.serving_files import checkpoint

    ckpt = checkpoint(scenario.model, chosen.quant, chosen.engine)
    server = resolve(chosen.engine_ref, chosen.device).launch(LaunchRequest(
        checkpoint=ckpt.ref, gpus=1, max_len=context, max_batch=1, quant=chosen.quant))
    return None if server is None else (server, ckpt)


def _vision(result, chosen) -> list[tuple[str, str, str]]:
    scenario = result.scenario
    argv = ["sizeup", "roofline", scenario.model, "--input", scenario.input_shape or "", "--dtype", chosen.quant,
            "--device", chosen.device.id, "--runtime", chosen.detail.get("runtime", chosen.engine)]
    latency = chosen.detail.get("latency_per_image_s")
    rows = [("latency per image", _line(argv), f"{_ms(latency)} per image" if latency else "")]
    rows.append(("serve", _line(["tritonserver", "--model-repository=/models"]),
                 "Triton, the model exported into the repository"))
    return rows
