"""`sizeup sweep SPEC --emit k8s|slurm`: a measurement sweep as cluster jobs, each task running `sizeup measure
… --db "$SIZEUP_DB"` into the shared run store (measure.sweep_spec reads the spec, report.sweep_jobs renders)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="a measurement sweep as Kubernetes Indexed Jobs (Kueue) or Slurm arrays",
                       description="SPEC is a YAML file: name, image, queue, measure (the flags of sizeup measure) "
                                   "and points (one task each: device, gpus, overrides). See docs/store.md.")
    p.add_argument("spec", metavar="SPEC.yaml")
    p.add_argument("--emit", choices=["k8s", "slurm"], required=True,
                   help="k8s: Indexed Jobs with Kueue queue labels; slurm: sbatch --array scripts")
    p.add_argument("--out", metavar="PATH", help="k8s: write the manifests to this file; slurm: write one script per "
                                                 "device type into this folder (needed when there are several)")
    p.add_argument("--json", action="store_true", help="print the tasks as one JSON object instead")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.errors import ConfigError
    from sizeup.files import user_path, write_file
    from sizeup.measure.sweep_spec import load_sweep_spec

    spec = load_sweep_spec(args.spec)
    if args.emit == "k8s":
        import yaml

        from sizeup.report.sweep_jobs import k8s_jobs

        jobs = k8s_jobs(spec)
        if args.json:
            emit_json({"sweep": spec.name, "jobs": jobs})
            return 0
        text = yaml.safe_dump_all(jobs, sort_keys=False, width=1000)
        files = {args.out: text} if args.out else None
    else:
        from sizeup.report.sweep_jobs import slurm_scripts

        scripts = slurm_scripts(spec)
        if args.json:
            emit_json({"sweep": spec.name, "scripts": scripts})
            return 0
        if args.out:
            folder = user_path(args.out)
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise ConfigError(f"--out {args.out}: cannot create the folder ({e.strerror or e})") from None
            files = {str(folder / name): body for name, body in scripts.items()}
        elif len(scripts) > 1:
            raise ConfigError(f"the sweep has {len(scripts)} device groups, one sbatch script each: give --out DIR")
        else:
            text = next(iter(scripts.values()))
            files = None
    if files is None:
        print(text, end="")
        return 0
    for name, body in files.items():
        write_file(name, body, what="--out", error=ConfigError)  # a FIFO nothing reads is refused, not waited on
        print(f"wrote {name}")
    return 0
