"""`estimate` under load: request lengths from a dataset, throughput under load (workload/serving.py) for the
estimate's configuration and for each batch of its sweep."""

from __future__ import annotations

from dataclasses import replace

from sizeup.errors import ConfigError

__all__ = ["DEFAULT_PROMPT", "DEFAULT_OUTPUT", "offline_load", "with_lengths", "load_of", "sweep_loads"]

DEFAULT_PROMPT, DEFAULT_OUTPUT = 512, 128


LOAD_ONLY = ("dataset", "input_len_spread", "output_len_spread", "num_prompts", "batcher_window", "batcher_max")
"""The options that describe requests under load."""


def offline_load(o, device):
    """`o` and the sentence saying so, `offline` (every prompt queued at once: `--concurrency inf`) implied where the
    engine's entry point is offline (`--engine-opt offline` of an engine with no arrival process: the offline entry
    point's only load) and options describing the requests under load came with no load; else `o` and ''."""
    given = next((n for n in LOAD_ONLY if getattr(o, n) is not None), None)
    if o.under_load or not o.engine_options or (given is None and o.replicas == 1):
        return o, ""
    from sizeup.engines.base import engine_settings, resolve
    from sizeup.engines.defaults import default_for_segment
    from sizeup.hardware.segments import segment_of

    engine = o.engine or default_for_segment(segment_of(device))[0]  # none named: the device class's, as estimated
    if not resolve(engine, device, settings=engine_settings(engine, o.engine_options)).offline:
        return o, ""
    flag = "--" + (given or "replicas").replace("_", "-")
    if given in ("batcher_window", "batcher_max"):
        raise ConfigError(f"{flag} {getattr(o, given)}: batches arrivals (--rps), and the offline entry point "
                          f"(--engine-opt offline: every prompt handed over in one call) has none")
    return replace(o, offline=True), (f"{flag} with --engine-opt offline: priced as --concurrency inf, every prompt "
                                      f"handed over in one call (the offline entry point's only load)")


def with_lengths(o):
    """`o` with its prompt and output: those given, else the dataset's means (under load), else 512 / 128; the
    load options checked to go together."""
    if not o.under_load:
        for name in LOAD_ONLY:
            if (value := getattr(o, name)) is not None:
                flag = "--" + name.replace("_", "-")
                raise ConfigError(f"{flag} {value}: describes requests under load: give --concurrency N|inf or "
                                  f"--rps R with it")
        if o.replicas != 1:
            raise ConfigError(f"--replicas {o.replicas}: with --concurrency N|inf or --rps R")
    else:
        given = sum(1 for v in (o.offline, o.concurrency is not None, o.rps is not None) if v)
        if given > 1:
            raise ConfigError("--concurrency and --rps: give one (a closed loop, every request queued, or an arrival "
                              "rate)")
        if o.batch != 1:
            raise ConfigError(f"--batch {o.batch}: under load the engine forms its batches; give --concurrency N|inf "
                              f"or --rps R, not --batch")
    prompt, output = o.prompt, o.output
    if o.dataset is not None:
        from sizeup.workload.serving import dataset_mix

        mix = dataset_mix(o.dataset, input_tokens=prompt, output_tokens=output or None)
        prompt, output = mix.input_tokens, output if output else mix.output_tokens
    return replace(o, prompt=DEFAULT_PROMPT if prompt is None else prompt,
                   output=DEFAULT_OUTPUT if output is None else output)


def load_of(result, o):
    """The estimate's configuration under the load `o` names (workload/serving.py ServingEstimate), `--concurrency N`
    refused for an offline entry point (`_offline_concurrency`)."""
    from sizeup.workload.serving import Load, RequestMix, dataset_mix, serving_load

    if o.concurrency is not None and result.execution.offline:
        raise ConfigError(_offline_concurrency(result.execution, o.concurrency))
    if o.dataset is not None:
        mix = dataset_mix(o.dataset, input_tokens=o.prompt, output_tokens=o.output,
                          input_spread=o.input_len_spread, output_spread=o.output_len_spread)
    else:
        mix = RequestMix(input_tokens=o.prompt, output_tokens=o.output, input_spread=o.input_len_spread,
                         output_spread=o.output_len_spread)
    load = Load(concurrency=o.concurrency, rate=o.rps, replicas=o.replicas, num_prompts=o.num_prompts,
                batcher_s=o.batcher_window, batcher_max=o.batcher_max)
    return serving_load(result.arch, result.device, result.config, mix, load, execution=result.execution)


def sweep_loads(result, points) -> tuple:
    """For each batch of a sweep, the steady state of that many requests in flight (a closed loop of the
    estimate's lengths): what a server holds at that concurrency, prefill included, beside batch / TPOT. None
    where the point does not fit or its compute is unknown."""
    from sizeup.workload.serving import Load, RequestMix, serving_load

    cfg = result.config
    if result.arch.encoder or cfg.output < 1:
        return (None,) * len(points)
    mix = RequestMix(input_tokens=cfg.prompt, output_tokens=cfg.output)
    out = []
    for p in points:
        if not p.fits or p.tokens_per_s is None:
            out.append(None)
            continue
        try:
            out.append(serving_load(result.arch, result.device, cfg, mix, Load(concurrency=p.batch, staggered=True),
                                    execution=result.execution.for_static_batch(False)))  # a server's requests
        except ConfigError:
            out.append(None)
    return tuple(out)


def _offline_concurrency(execution, n: int) -> str:
    """Why `--concurrency N` is refused for an offline entry point (`ExecutionModel.offline`: vLLM's LLM class,
    SGLang's offline engine; every prompt submitted in one call, no arrival process, as `--rps` is refused in
    workload/serving.py): it has no clients keeping N requests in flight, its scheduler's cap bounds the batch; the
    error names the engine's option that sets the cap (`ExecutionModel.BATCH_CAP_OPTION`), with `--concurrency inf`."""
    option = type(execution).BATCH_CAP_OPTION
    cap = (f"to cap its batch give --engine-opt {option}={n} with --concurrency inf" if option
           else "give --concurrency inf")
    return (f"--concurrency {n}: the offline entry point (--engine-opt offline: every prompt handed over in one call) "
            f"has no clients to keep {n} requests in flight; {cap}, or drop offline to load a server")
