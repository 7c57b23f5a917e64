"""`sizeup train` for a whole job of a torch model (registered by `train.py`):

    sizeup train --from-run 12 --samples 10000 --epochs 20 [--offer ID | --price-per-hour 1.2]
        a measured trial (sizeup measure MODEL --train --dataloader D --steps 50) scaled to the full job
    sizeup train model.py:net --input 32x3x640x640 --device a100-80g --samples 10000 --epochs 20
        [--cpu epyc-9654 --workers 8 --loader-run 7 | --loader-rate 120]
        a traced training step priced on the device, times the job; with the loader, whichever is slower decides
"""

from __future__ import annotations

import argparse

from sizeup.units import number_flag

__all__ = ["add_job_arguments", "wants_job", "run_job"]


def add_job_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("a torch model's whole job (--samples, --from-run)")
    g.add_argument("--samples", type=number_flag(integer=True, minimum=1, maximum=10**12, unit="count"),
                   help="samples in the data set (with --epochs): the job's time and cost")
    g.add_argument("--from-run", type=number_flag(integer=True, minimum=1, maximum=2**62), metavar="RUN",
                   help="scale a measured trial run (sizeup measure MODEL --train --dataloader D --steps N)")
    g.add_argument("--price-per-hour", type=number_flag(above=0, maximum=1e6), metavar="USD",
                   help="with --from-run: the hourly price of the machine the trial ran on")
    g.add_argument("--cpu", metavar="NAME", help="the host CPU (catalog name): how many loader workers it runs")
    g.add_argument("--workers", type=number_flag(integer=True, minimum=0, maximum=1024),
                   help="data loader workers per GPU (with --cpu or an offer that states its vCPUs)")
    g.add_argument("--loader-run", type=number_flag(integer=True, minimum=1, maximum=2**62), metavar="RUN",
                   help="the loader's rates from a 'sizeup measure --dataloader' run")
    g.add_argument("--loader-rate", type=number_flag(above=0, maximum=1e9), metavar="SAMPLES_PER_S",
                   help="one loader worker's samples/s, measured on this machine")


def wants_job(args: argparse.Namespace) -> bool:
    return any(getattr(args, k, None) is not None for k in ("from_run", "samples", "cpu", "workers", "loader_run",
                                                            "loader_rate", "price_per_hour"))


def run_job(args: argparse.Namespace) -> int:
    from sizeup.errors import ConfigError

    if args.from_run is not None:
        for flag in ("cpu", "workers", "loader_run", "loader_rate"):
            if getattr(args, flag) is not None:
                raise ConfigError(f"--from-run scales what the trial measured, its loader included: "
                                  f"--{flag.replace('_', '-')} does not apply")
        if args.model or args.input or args.input_spec:
            raise ConfigError("--from-run reads the model from the run: give no MODEL or --input")
        return _from_run(args)
    if args.price_per_hour is not None:
        raise ConfigError("--price-per-hour prices a --from-run trial; a predicted job is priced on --offer or the "
                          "device's offers")
    if not args.model or ":" not in args.model or not (args.input or args.input_spec):
        raise ConfigError("--samples, --cpu and --workers are for a torch model: MODEL as FILE.py:FACTORY with "
                          "--input (or --from-run RUN)")
    return _traced_job(args)


def _need_epochs(args, samples_per_epoch):
    from sizeup.errors import ConfigError

    if args.epochs is None:
        raise ConfigError("give --epochs E (passes over the data)")
    samples = args.samples if args.samples is not None else samples_per_epoch
    if samples is None:
        raise ConfigError("give --samples N: the trial's loader has no known size")
    return int(samples), float(args.epochs)


def _from_run(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.errors import ConfigError
    from sizeup.cli.db import open_reader
    from sizeup.measure.trial import trial_from_stored
    from sizeup.workload.trial_scale import scale_job, step_range

    with open_reader(args.db) as store:
        run = store.run(args.from_run)
        if run.kind != "trial":
            raise ConfigError(f"run {args.from_run} is a {run.kind} run: --from-run scales a trial (sizeup measure "
                              "MODEL --train --dataloader D --steps N)")
        point = run.points[0]
        trial = trial_from_stored(run.config, point.extra, store.samples(point.id), store.cpu_samples(point.id))
    samples, epochs = _need_epochs(args, trial["samples_per_epoch"])
    hourly, where, notes = _trial_price(args, run)
    job = scale_job(step_range(trial["step_s"]), trial["batch_size"], samples, epochs,
                    epoch_restart_s=trial["epoch_restart_s"], drop_last=trial["drop_last"], hourly_usd=hourly,
                    source=f"trial run {args.from_run} ({len(trial['step_s'])} steps on {run.device})")
    cpu_job = None
    if trial["cpu_s"] and len(trial["cpu_s"]) == len(trial["step_s"]):
        cpu_job = scale_job(step_range(trial["cpu_s"]), trial["batch_size"], samples, epochs,
                            epoch_restart_s=trial["epoch_restart_s"], drop_last=trial["drop_last"],
                            hourly_usd=hourly, source=f"trial run {args.from_run}'s CPU time per step")
        busy = 1 - sum(trial["cpu_s"]) / sum(trial["step_s"])
        if busy > 0.1:
            notes.append(f"other processes took {busy:.0%} of the trial machine's time: on an idle machine the job "
                         f"takes its CPU-time figure, {cpu_job.time_s.typical / 3600:,.3g} h")
    wait = trial["data_wait_share"] or 0.0
    if wait >= 0.1:
        notes.append(f"the loader, not the model, decides: {wait:.0%} of each trial step waited for data "
                     f"(loader {trial['loader_samples_per_s'] or 0:,.0f} samples/s)")
    data = {"run_id": args.from_run, "model": trial["model"], "device": run.device, "priced_on": where,
            "peak_memory_bytes": trial["peak_memory_bytes"], "memory_kind": trial["memory_kind"],
            "data_wait_share": wait, "job": job.to_dict(),
            "job_cpu_time": None if cpu_job is None else cpu_job.to_dict(), "notes": notes}
    if args.json:
        emit_json(data)
    else:
        print(render_job(data))
    return 0


def _trial_price(args, run) -> tuple[float | None, str | None, list[str]]:
    from sizeup.errors import ConfigError

    if args.price_per_hour is not None and args.offer:
        raise ConfigError("--offer and --price-per-hour both price the job: give one")
    if args.price_per_hour is not None:
        return args.price_per_hour, "--price-per-hour", []
    if not args.offer:
        return None, None, ["no price: give --offer ID (the trial's device) or --price-per-hour USD"]
    from sizeup.hardware.catalog import load_catalog

    catalog = load_catalog(args.catalog)
    offer = catalog.offers.get(args.offer)
    if offer is None:
        raise ConfigError(f"--offer {args.offer!r}: no such offer (see 'sizeup hw offers')")
    gpu_name = (run.environment or {}).get("gpu_name")
    if not str(run.device).startswith("cuda") or not gpu_name:
        raise ConfigError(f"run {run.id} ran on {run.device}, not on {offer.gpu} of offer {offer.id}: its step time "
                          "is not that GPU's; price it with --price-per-hour, or run the trial on that GPU")
    ran_on = catalog.device(gpu_name).id
    if ran_on != offer.gpu:
        raise ConfigError(f"run {run.id} ran on {ran_on}; offer {offer.id} has {offer.gpu}: run the trial on that GPU")
    notes = []
    if offer.gpu_count > 1:
        notes.append(f"offer {offer.id} bills {offer.gpu_count} GPUs; the trial used one: the cost is the whole "
                     "instance's unless the job runs data-parallel on all of them")
    return offer.on_demand_usd_per_hour, f"{offer.id} on-demand", notes


def _traced_job(args: argparse.Namespace) -> int:
    from sizeup.api import count_flops, parse_input_specs
    from sizeup.cli.main import emit_json
    from sizeup.errors import ConfigError
    from sizeup.hardware.catalog import load_catalog
    from sizeup.ranges import Range
    from sizeup.workload.training import estimate_traced_training
    from sizeup.workload.trial_scale import scale_job

    if args.device is None:
        raise ConfigError("give --device NAME: the GPU the job runs on")
    optimizer = args.optimizer or "adamw"
    if optimizer not in ("adamw", "adam", "sgd"):
        raise ConfigError(f"--optimizer {optimizer!r}: a traced step supports adamw, adam or sgd")
    catalog = load_catalog(args.catalog)
    device = catalog.device(args.device)
    inputs = parse_input_specs(args.input, args.input_spec)
    batch = inputs[0].shape[0]
    report = count_flops(args.model, inputs, dtype=args.dtype, mode="train", optimizer=optimizer)
    estimate = estimate_traced_training(report.ledger, device, samples_per_step=batch)
    offer = _offer(catalog, args, device)
    step = estimate.step_s
    notes = list(estimate.assumptions)
    loader = None
    if any(getattr(args, k) is not None for k in ("cpu", "workers", "loader_run", "loader_rate")):
        loader = _loader_verdict(args, catalog, offer, batch / step.typical)
        notes += list(loader.assumptions)
        if loader.input_bound:  # the step takes the longer of the GPU's work and one batch's loading
            per = batch / loader.loader_samples_per_s
            step = Range(max(step.low, per), max(step.typical, per), max(step.high, per))
            notes.append(f"the loader, not the GPU, decides: {loader.summary}")
    data = {"model": estimate.name, "device": device.id, "batch": batch, "fits": estimate.fits,
            "peak_memory_bytes": estimate.memory_peak_bytes, "gpu_step_s": estimate.step_s.to_dict(),
            "loader": None if loader is None else loader.to_dict(), "priced_on": None if offer is None else
            f"{offer.id} on-demand"}
    if args.samples is not None or args.epochs is not None:
        samples, epochs = _need_epochs(args, None)
        job = scale_job(step, batch, samples, epochs, hourly_usd=None if offer is None else offer.on_demand_usd_per_hour,
                        source="traced step priced on " + device.name, range_basis="the priced step's range"
                        + (", or the loader's rate where it is the slower" if loader and loader.input_bound else ""),
                        restart_unknown="a predicted job: measure a trial to see it")
        data["job"] = job.to_dict()
    data["notes"] = notes
    if args.json:
        emit_json(data)
    else:
        print(render_job(data))
    return 0


def _offer(catalog, args, device):
    """--offer, else the device's cheapest one-GPU offer on demand (one GPU trains here)."""
    from sizeup.workload.training.cost import pick_offer

    return pick_offer(device, 1, list(catalog.offers.values()), args.offer)


def _loader_verdict(args, catalog, offer, gpu_rate: float):
    """The loader at --workers on the host beside the GPU's samples/s."""
    from sizeup.errors import ConfigError, ResolveError
    from sizeup.workload.input_pipeline import LoaderRates, clock_scale, compare_pipeline, rates_from_points

    if args.workers is None:
        raise ConfigError("give --workers N: the data loader workers per GPU")
    if (args.loader_run is None) == (args.loader_rate is None):
        raise ConfigError("give the loader's rate: --loader-run RUN (a sizeup measure --dataloader run) or "
                          "--loader-rate SAMPLES_PER_S (one worker's)")
    measured_cpu = None
    if args.loader_run is not None:
        from sizeup.cli.db import open_reader

        with open_reader(args.db) as store:
            run = store.run(args.loader_run)
        if run.kind != "loader":
            raise ConfigError(f"run {args.loader_run} is a {run.kind} run: --loader-run takes a sizeup measure "
                              "--dataloader run")
        rates = rates_from_points([p.extra for p in run.points], int(run.config.get("cores") or 1))
        model = (run.environment or {}).get("cpu_model")
        if model:
            try:
                measured_cpu = catalog.device(model)
            except ResolveError:
                measured_cpu = None
        where = f"run {args.loader_run}" + (f" ({model})" if model else "")
    else:
        rates = LoaderRates(by_workers={1: float(args.loader_rate)}, cores=1)
        where = "--loader-rate"
        from sizeup.hardware.local import _cpuinfo

        try:
            measured_cpu = catalog.device(_cpuinfo()[0])
        except (ResolveError, OSError, ValueError):
            measured_cpu = None
    cores, host = None, None
    if args.cpu:
        host = catalog.device(args.cpu)
        if host.kind != "cpu" or not host.compute_units:
            raise ConfigError(f"--cpu {args.cpu!r}: {host.name} is not a CPU with a known core count")
        cores = host.compute_units
    elif offer is not None and offer.vcpus:
        cores = max(1, offer.vcpus // max(1, offer.gpu_count))
    else:
        raise ConfigError("give --cpu NAME (the host CPU) so the workers' cores are known")
    scale, why = clock_scale(measured_cpu, host)
    verdict = compare_pipeline(rates, gpu_rate, args.workers, cores=cores, scale=scale, measured_on=where)
    if why:
        from dataclasses import replace

        verdict = replace(verdict, assumptions=(*verdict.assumptions, why))
    if not args.cpu:
        from dataclasses import replace

        verdict = replace(verdict, assumptions=(*verdict.assumptions,
                                                f"{cores} cores per GPU: offer {offer.id}'s {offer.vcpus} vCPUs / "
                                                f"{offer.gpu_count} GPUs"))
    return verdict


def render_job(data: dict) -> str:
    from sizeup.units import format_bytes, format_seconds

    lines = []
    if "run_id" in data:
        lines.append(f"trial run {data['run_id']}: {data['model']} on {data['device']}; peak memory "
                     f"{format_bytes(data['peak_memory_bytes'] or 0)} ({data['memory_kind']})")
    else:
        s = data["gpu_step_s"]
        lines.append(f"{data['model']} on {data['device']}: training step {format_seconds(s['typical'])} "
                     f"({format_seconds(s['low'])} - {format_seconds(s['high'])}) at batch {data['batch']}; peak "
                     f"memory {format_bytes(data['peak_memory_bytes'])} ({'fits' if data['fits'] else 'DOES NOT FIT'})")
        if data.get("loader"):
            lines.append(f"loader: {data['loader']['summary']}")
    job = data.get("job")
    if job:
        t, h = job["time_s"], job["hours"]
        lines.append(f"job: {job['samples']:,} samples x {job['epochs']:g} epochs = {job['steps']:,.0f} steps: "
                     f"{format_seconds(t['typical'])} ({format_seconds(t['low'])} - {format_seconds(t['high'])}), "
                     f"{h['typical']:,.3g} h")
        if job["cost_usd"]:
            c = job["cost_usd"]
            lines.append(f"cost on {data['priced_on']}: ${c['typical']:,.2f} (${c['low']:,.2f} - ${c['high']:,.2f}) "
                         f"at ${job['hourly_usd']:,.2f}/h")
        lines.extend(f"assumption: {a}" for a in job["assumptions"])
    cpu = data.get("job_cpu_time")
    if cpu:
        t = cpu["time_s"]
        lines.append(f"on the trial's CPU time (no other process taking turns): {format_seconds(t['typical'])} "
                     f"({format_seconds(t['low'])} - {format_seconds(t['high'])})")
    lines.extend(f"note: {n}" for n in data.get("notes", []))
    return "\n".join(lines)

