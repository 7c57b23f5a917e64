"""Which calibration profile an estimate may use, and what it says about it.

A fitted profile is keyed by device type, engine and engine version, and workload class; it is saved under
`NAME/CLASS` (`local/cnn`, `h100-team/serving`) beside the micro-benchmark profile `NAME` (the measured peaks of
one machine, class-free). A profile's fitted efficiencies are applied to an estimate only where its class is one
the estimate is of (`ESTIMATE_CLASSES`) and its engine is the estimate's (`ENGINE_RUNS`); the estimate then says
so: "calibrated on 14 runs from 3 machines, vllm 0.10". Anything else is never applied silently:

- `--device local` without `--calibration` prices on the measured peaks of profile `local`, and takes a fit only
  of the estimate's class; otherwise it says which fit it did not apply and why.
- `--calibration NAME` naming a profile of another class is refused in one line (listing the classes it has).
- A profile fitted on another version of the estimate's engine is applied and flagged stale.
- A profile saved before classes were kept (schema version 3) is applied only where it is named.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sizeup.errors import ConfigError

if TYPE_CHECKING:
    from sizeup.ledger import Ledger
    from sizeup.measure.calibrate import Profile

__all__ = ["WORKLOAD_CLASSES", "ESTIMATE_CLASSES", "ENGINE_RUNS", "Workload", "ledger_class", "class_profile_name",
           "choose_profile", "engines_match", "fit_summary", "peaks_only", "KIND_OF_CLASS"]

WORKLOAD_CLASSES = ("llm", "serving", "cnn", "traced", "train-step")
"""llm: a transformer's prefill and decode timed by sizeup's own decoder; serving: an LLM behind a serving engine
under load (imported load tests, `sizeup load`); cnn: inference of a traced model whose matrix FLOPs are mostly
convolutions; traced: inference of any other traced torch or ONNX model; train-step: a training step."""
ESTIMATE_CLASSES = {"llm": ("llm", "serving"), "vision": ("cnn", "traced"), "train": ("train-step",)}
"""The classes whose profiles an estimate of each kind may take: an LLM's estimate (estimate, plan) takes a fit
of LLM runs or of served LLMs; a traced or ONNX model's (roofline, estimate MODEL.onnx) a fit of traced models;
a training step's (train) a fit of training steps."""
ENGINE_RUNS = {"hf": ("hf", "torch"), "torch": ("torch", "hf"), "onnxruntime": ("onnxruntime",)}
"""Engines whose runs stand for an estimate's engine: sizeup's own decoder (engine "torch") is eager PyTorch
with SDPA attention, as transformers' eager model ("hf") runs; any other engine stands only for itself."""
CONV_SHARE = 0.5
"""A traced model is of class "cnn" when convolutions do at least this share of its matrix FLOPs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """What an estimate is of, as profiles are keyed: its kind (a key of ESTIMATE_CLASSES) and engine."""

    kind: str
    engine: str | None = None
    engine_version: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ESTIMATE_CLASSES:
            raise ConfigError(f"workload kind {self.kind!r}: expected one of {', '.join(ESTIMATE_CLASSES)}")

    @property
    def classes(self) -> tuple[str, ...]:
        return ESTIMATE_CLASSES[self.kind]

    @classmethod
    def of_engine(cls, kind: str, engine: str | None) -> Workload:
        """From an engine as the user typed it, with its version: "vllm@0.10"."""
        from sizeup.measure.provenance import split_engine

        name, version = split_engine(engine)
        return cls(kind=kind, engine=name, engine_version=version)


def ledger_class(ledger: Ledger) -> str:
    """"cnn" when convolutions do at least CONV_SHARE of the ledger's matrix FLOPs, else "traced"."""
    from sizeup.ledger import OpKind

    total = sum(o.matmul_flops * o.count for o in ledger.ops)
    conv = sum(o.matmul_flops * o.count for o in ledger.ops if o.kind == OpKind.CONV)
    return "cnn" if total and conv >= CONV_SHARE * total else "traced"


def class_profile_name(name: str, workload_class: str) -> str:
    """Where a fit of `workload_class` under the profile `name` is saved: NAME/CLASS."""
    return f"{name}/{workload_class}"


def engines_match(profile_engine: str | None, workload: Workload) -> bool:
    """Whether a profile fitted on `profile_engine`'s runs stands for the estimate's engine (ENGINE_RUNS); an
    estimate or a profile without an engine matches any."""
    if not profile_engine or not workload.engine:
        return True
    return profile_engine in ENGINE_RUNS.get(workload.engine, (workload.engine,))


def fit_summary(data: dict) -> str:
    """"calibrated on 14 runs from 3 machines, vllm 0.10" from a saved profile's data."""
    fit = data.get("class_fit") or {}
    runs, hosts = len(fit.get("runs") or data.get("runs") or []), len(fit.get("hosts") or [])
    machines = f" from {hosts} machine{'s' if hosts != 1 else ''}" if hosts else ""
    engine = " ".join(v for v in (fit.get("engine"), fit.get("engine_version")) if v)
    if not runs:
        return "fitted efficiencies (the runs they were fitted on are not recorded)"
    return f"calibrated on {runs} run{'s' if runs != 1 else ''}{machines}" + (f", {engine}" if engine else "")


def _version_note(profile_version: str | None, workload: Workload, engine: str | None) -> str | None:
    if not profile_version or not workload.engine_version or profile_version == workload.engine_version:
        return None
    return (f"STALE: fitted on {engine or workload.engine} {profile_version}, this estimate is for "
            f"{workload.engine} {workload.engine_version}: measure the new version and calibrate again")


def choose_profile(store, name: str, workload: Workload, *, implicit: bool) -> Profile:
    """The profile an estimate of `workload` takes from `name` (see the module): a fit of the workload's class
    under NAME/CLASS or NAME itself, else (for `--device local`) NAME's measured peaks alone. The returned
    profile's `notes` say what was applied and why."""
    from sizeup.measure.calibrate import load_profile

    names = store.calibrations()
    if name not in names and not any(n.startswith(name + "/") for n in names):
        store.calibration(name)  # the store's own "no calibration ..., saved: ..." error
    family = [n for n in names if n == name or n.startswith(name + "/")]
    keyed = {n: store.calibration(n)["key"] for n in family}
    matching = [n for n in family if keyed[n].get("workload_class") in workload.classes
                and engines_match(keyed[n].get("engine"), workload)]
    exact = [n for n in matching if not _version_note(keyed[n].get("engine_version"), workload, keyed[n].get("engine"))]
    if exact or matching:
        chosen = (exact or matching)[0]
        profile = load_profile(store, chosen)
        key = keyed[chosen]
        note = (f"{fit_summary(profile.data)} (calibration {chosen!r}, class {key['workload_class']}"
                f"{', device type ' + key['device_type'] if key.get('device_type') else ''})")
        stale = _version_note(key.get("engine_version"), workload, key.get("engine"))
        return replace(profile, notes=(note, *([stale] if stale else [])))
    if name not in names:
        classes = sorted({keyed[n].get("workload_class") or "?" for n in family})
        raise ConfigError(f"calibration {name!r} holds no profile for a {workload.kind} estimate (it has fits of: "
                          f"{', '.join(classes)}); calibrate from {'/'.join(workload.classes)} runs, or drop "
                          "--calibration")
    profile = load_profile(store, name)
    key = keyed[name]
    fitted_on = key.get("workload_class")
    others = [keyed[n].get("workload_class") for n in family if n != name]
    if not profile.fitted:
        skipped = f"; its fits of {', '.join(sorted(set(others)))} runs are not applied to a {workload.kind} estimate" \
            if others else ""
        return replace(profile, notes=(f"measured peaks of calibration {name!r} (micro-benchmarks, no fitted "
                                       f"efficiency){skipped}",))
    if fitted_on is None and not implicit:  # saved before classes were kept, and named: the user asked for it
        return replace(profile, notes=(f"{fit_summary(profile.data)} (calibration {name!r}, saved before workload "
                                       "classes were kept: its class is not known)",))
    if fitted_on is not None and not implicit:
        raise ConfigError(f"calibration {name!r} was fitted on {fitted_on} runs, not on "
                          f"{'/'.join(workload.classes)}: it would mis-price a {workload.kind} estimate (calibrate "
                          f"from {'/'.join(workload.classes)} runs, or drop --calibration)")
    why = f"fitted on {fitted_on} runs" if fitted_on else "saved before workload classes were kept"
    peaks = peaks_only(profile)
    return replace(peaks, notes=(f"measured peaks of calibration {name!r}; its fitted efficiencies ({why}) are not "
                                 f"applied to a {workload.kind} estimate",))


def peaks_only(profile: Profile) -> Profile:
    """The profile's measured device with no fitted efficiency (the micro-benchmarks' rates)."""
    from sizeup.measure.calibrate import uncalibrated_efficiency

    return replace(profile, efficiency=uncalibrated_efficiency(profile.device, profile.data.get("bench")),
                   fitted=False, residual_median=None)


KIND_OF_CLASS = {"llm": "llm", "serving": "llm", "cnn": "vision", "traced": "vision", "train-step": "train"}
