"""The execution model: what one engine, at one release, built for one backend, does on one device.

An estimate resolves it once (`resolve("vllm@0.10", device)`) and the pricing layer asks it, never the engine's
name: which matrix kernel runs an op at which fraction of which peak (`matrix_kernel`), the host time per kernel
and per step (`per_op_overhead`, `step_overhead`, `extra_launches`), the kernel-by-kernel runtime its kernels run
under where it has one (`runtime`: fusions, graph replay, the layout convolutions reach cuDNN in; under a runtime
the roofline also serves reads from L2 and prices sub-wave matrix products, price/roofline.py), what it holds in
memory for a request (`memory`, engines/reserve.py) and how it batches requests (`batching`).

One file per engine under this package subclasses `ExecutionModel`, registers it with `@engine("name", aliases)`
and reads its settings from data/engines/NAME.yaml (engines/profile.py). A lookup imports only the file whose
decorator line names the engine (found by reading the files' text, as ingest/families does), so adding an engine
is one new file and its data file.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from sizeup.errors import ConfigError
from sizeup.hardware.schema import DeviceSpec
from sizeup.ingest.arch import ModelArch
from sizeup.engines.entry_point import EntryPoint
from sizeup.engines.policies import Batching, TensorParallel
from sizeup.engines.profile import EngineProfile, engine_profile
from sizeup.ranges import Range

__all__ = ["Batching", "EngineRef", "ExecutionModel", "TensorParallel", "engine", "engine_class", "engine_names", "parse_engine",
           "resolve", "OPTIONS"]

OPTIONS = {"gpu_layers": "--gpu-layers", "threads": "--threads", "backend": "--backend", "build_date": "--build-date"}
"""Settings only some engines take, by the flag that sets them: an engine lists those it takes in `OPTIONS`."""


class EngineRef(NamedTuple):
    """An engine as a user names it: `vllm`, `vllm@0.10`, `llama.cpp@2024-06-01`."""
    name: str
    """The registered name (an alias resolved)."""
    version: str | None = None
    """The release asked for; None: the engine's current release."""

    def __str__(self) -> str:
        return self.name if self.version is None else f"{self.name}@{self.version}"


@dataclass(frozen=True, kw_only=True)
class ExecutionModel(EntryPoint):
    """One engine × release × backend × device. Subclasses override the hooks where their engine differs."""

    NAME: ClassVar[str] = ""
    OPTIONS: ClassVar[frozenset[str]] = frozenset()
    """Keys of `OPTIONS` (the module constant) the engine takes."""
    DATA: ClassVar[str | None] = None
    """The data/engines file of its settings (default: NAME)."""
    FORMATS: ClassVar[tuple[str, ...]] = ("bf16",)
    """The weight formats people run with this engine, most precise first: a device table takes the first that
    fits, and an estimate that does not fit suggests the next."""
    FORMAT_NAMES: ClassVar[dict[str, tuple[str, str]]] = {}
    """The engine's own spellings of its formats (lower case, no spaces, '-' or '_') -> (format id, why): read before
    formats.py's shared names, so `--engine mlx --quant 4bit` is mlx-community's 4-bit build (engine_format_name)."""
    NATIVE_FP8_ONLY: ClassVar[bool] = False
    """Whether the engine's fp8 needs fp8 tensor units (so fp8 is not tried on a device without an fp8 peak)."""
    LOADS: ClassVar[tuple[str, ...] | None] = None
    """The weight formats the engine can load at all, as format families (formats.py `family`) or format ids;
    None: any. A format outside them is refused (`check_weights`), so no plan runs an engine on weights it
    cannot read."""

    @classmethod
    def check_weights(cls, fmt) -> None:
        """Refuse weights of `fmt` (formats.py) the engine cannot load, in one line naming what it loads."""
        if cls.LOADS is not None and fmt.family not in cls.LOADS and fmt.id not in cls.LOADS:
            raise ConfigError(f"--quant {fmt.id}: {cls.NAME} cannot load {fmt.id} weights; it loads the "
                              f"{', '.join(cls.LOADS)} formats (e.g. {', '.join(cls.FORMATS)})")

    NATIVE_ONLY: ClassVar[tuple[str, ...]] = ()
    """Formats the engine runs only on the device's own tensor units of the format's compute precision (no
    weight-only path): refused on a device without that peak, and left out of its format ladder there."""
    NATIVE_ONLY_HINT: ClassVar[str] = ""
    """What the refusal suggests instead (another engine that runs the format there)."""

    def check_device_weights(self, fmt) -> None:
        """Refuse, in one line, weights of a NATIVE_ONLY format on a device without tensor units of its precision."""
        if fmt.id in self.NATIVE_ONLY and fmt.compute_dtype not in self.device.peak_flops_per_s:
            unit = fmt.compute_dtype.upper()
            raise ConfigError(f"--quant {fmt.id}: {self.NAME} runs {fmt.id} only on {unit} tensor cores; "
                              f"{self.device.id} has none" + (f" ({self.NATIVE_ONLY_HINT})" if self.NATIVE_ONLY_HINT
                                                             else ""))

    device: DeviceSpec
    profile: EngineProfile
    backend: str | None = None
    """The build's compute backend where the engine is built per backend (llama.cpp); None: the device's own."""
    build_date: str | None = None
    notes: tuple[str, ...] = ()
    """What resolving assumed (a setting read for another release, the backend chosen), for the estimate."""
    static: bool = False
    """Priced as a static batch: every request handed over at once, no arrival process (an estimate with no load, a
    batch job; `for_static_batch`), not a served run; an engine whose server costs more than its in-process entry
    point prices the latter (TensorRT-LLM)."""
    memo: dict = field(default_factory=dict, compare=False, repr=False)
    """Per-model cache of what the pricing layer derives from it (phase efficiencies), filled by price/."""

    def for_static_batch(self, static: bool = True) -> ExecutionModel:
        """This model pricing a static batch (`static`), or a served run (False)."""
        return self if self.static == static else replace(self, static=static, memo={})

    # --- identity ---------------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.NAME

    @property
    def version(self) -> str:
        return self.profile.version

    @property
    def label(self) -> str:
        """'vllm 0.34': the engine and release an estimate describes."""
        return f"{self.NAME} {self.version}".strip()

    @classmethod
    def build(cls, device: DeviceSpec, version: str | None = None, *, backend: str | None = None,
              build_date: str | None = None, settings: dict[str, float] | None = None) -> ExecutionModel:
        """Resolve the engine at `version` (None: its current release) on `device`; subclasses check their options
        here. `settings` override the profile's (e.g. a run's own gpu_memory_utilization)."""
        profile = cls.profile_at(version).with_settings(settings)
        return cls(device=device, profile=profile, backend=backend, build_date=build_date, notes=profile.notes)

    @classmethod
    def profile_at(cls, version: str | None) -> EngineProfile:
        """The engine's settings at `version` (None: its current release): data/engines/DATA.yaml (DATA: NAME); an
        engine whose settings live in its own file returns them here."""
        return engine_profile(cls.DATA or cls.NAME, version)

    @classmethod
    def check_version(cls, version: str) -> None:
        """Raise a one-line ConfigError unless `version` is a release the engine's data describes."""
        _check_version(cls, version)

    def on(self, device: DeviceSpec) -> ExecutionModel:
        """The same engine and release on another device (the host CPU of a partial offload, a threads-scaled CPU)."""
        return replace(self, device=device, memo={})

    def describe(self) -> dict[str, Any]:
        """The engine an estimate describes, for its JSON."""
        versions = self.profile.versions
        return {"name": self.NAME, "version": self.version, "default_version": versions.default if versions else None,
                "backend": self.backend, "build_date": self.build_date, "runtime": self.profile.runtime,
                "batching": self.batching.to_dict()}

    # --- kernels and host time --------------------------------------------------------------------------------
    @property
    def runtime(self):
        """The runtime of data/efficiency/overheads.yaml the engine prices its kernels under (engines/runtimes.py
        Runtime), or None where its efficiencies are per engine (kernels.yaml or the device defaults)."""
        if self.profile.runtime is None:
            return None
        from sizeup.engines.runtimes import get_runtime

        return get_runtime(self.profile.runtime)

    def matrix_kernel(self, weights: str, decode: bool, tokens: int):
        """The matrix kernel the engine runs for `weights` in this phase at `tokens` tokens per step, with the
        fraction of its peak it reaches (engines/kernels.py Kernel), or None: the device defaults apply."""
        return None

    def decode_attention_memory(self) -> Range | None:
        """The share of the peak bandwidth the engine's decode attention kernel streams the KV cache at, where its
        data file gives a measured one (Efficiency.attention_memory); None: the decode phase's memory fraction."""
        return None

    def moe_kernel(self, weights: str, decode: bool, tokens: int, rows: float | None = None):
        """A MoE layer's grouped GEMM on `weights` at `rows` per expert (tokens x top-k / experts): a Kernel, or None
        (priced as matmuls); by default the `moe_gemm[_memory]@FORMAT@ARCH` settings (engines/settings_kernels.py)."""
        from sizeup.engines.settings_kernels import moe_kernel
        return moe_kernel(self, weights, rows)

    mla_cache_key = "mla_latent_cache"
    """The data key saying whether this release caches MLA as its latent (engines/as_run.py); vLLM's by engine."""

    def as_run(self, arch: ModelArch, tp: int) -> tuple[ExecutionModel, ModelArch, tuple[str, ...]]:
        """This model for a replica of `tp` tensor-parallel GPUs (`at_gpus`), `arch` as it runs it (engines/as_run.py:
        a sliding window its model file ignores, MLA cached per head before its latent kernels) and the sentences
        saying what changed. Asked by the estimate and the planner alike before memory and ledgers."""
        from sizeup.engines.as_run import as_run
        model = self.at_gpus(tp)
        return (model, *as_run(model, arch))

    def missing_kernel_note(self, weights: str, decode: bool) -> str | None:
        """What to say when the engine would run a kernel the table has no entry for (None: nothing)."""
        return None

    def per_op_overhead(self, decode: bool, tokens: int | None = None) -> Range | None:
        """Host time per kernel on an asynchronous device (None: the device kind's default): at decode the engine's
        `decode_overhead_s` (a decode of more than `graph_max_batch` sequences has no captured graph: None, eager
        launches), else its runtime's per-op time."""
        if decode and tokens and (self.graph_max_batch or tokens) < tokens:
            return None
        overhead = self.profile.range("decode_overhead_s") if decode else None
        runtime = self.runtime
        if runtime is not None and overhead is None:
            overhead = runtime.per_op_s
        return overhead

    attention_ranks = property(lambda self: max(int(self.profile.value("attention_dp_ranks", 1)), 1))
    """Attention data-parallel ranks of a replica (`attention_dp_ranks`, set by an engine's `at_gpus` where it runs
    attention data parallelism: engines/attention_dp.py); 1: attention tensor-parallel as the experts."""

    graph_max_batch = property(lambda self: int(self.profile.value("cuda_graph_max_bs", 0)) or None)
    """Largest decode batch replayed from a captured graph (`cuda_graph_max_bs` in the data); None: no limit."""

    def at_gpus(self, gpus: int) -> ExecutionModel:
        """The execution model of one replica of `gpus` tensor-parallel GPUs, where a setting the engine derives
        depends on the count (SGLang's CUDA-graph capture size by tensor-parallel size); by default itself. Asked
        (through `as_run`) before pricing, so an engine's defaults by GPU count need no branch outside engines/."""
        return self

    def _with_setting(self, key: str, value: float) -> ExecutionModel:
        """This model with the profile's `key` set to `value` (an engine's per-GPU-count default, `at_gpus`): itself
        where the value is already set; else a copy with its own memo, kept in this model's memo so a plan that asks
        again gets the same object (and the phases it priced)."""
        if value == self.profile.value(key, None):
            return self
        cached = self.memo.get(("with", key, value))
        if cached is None:
            cached = replace(self, profile=self.profile.with_settings({key: value}), memo={})
            self.memo[("with", key, value)] = cached
        return cached

    def step_overhead(self, arch: ModelArch, decode: bool) -> Range | None:
        """Host time of one step outside the ledger's ops (scheduler, sampling, Python), None where none."""
        return self.profile.range("step_overhead_s")

    def host_floor(self, requests: float, gpus: int = 1) -> Range | None:
        """Host time of one iteration that grows with the `requests` it holds (`host_per_request_s`: scheduling,
        the sampler's and the output processor's per-request bookkeeping in Python), which the engine overlaps with
        the GPU's step (overlap / async scheduling), so a step lasts at least this long; None: no such figure.
        `gpus`: the GPUs of the replica; one executor loop handles every request unless the engine splits them."""
        per = self.profile.range("host_per_request_s")
        return None if per is None or per.high <= 0 else per.scale(max(requests, 0.0))

    front_streams = True  # workload/front_process.py: the front floor's streaming queues with request intake
    host_overlapped = property(lambda self: bool(self.profile.value("host_overlap", 1)))
    """Whether `host_floor` runs beside the GPU step (overlap / async scheduling: a floor under the step) or before
    it (the data's `host_overlap` 0: no overlap scheduler, so the host's time is added to the step)."""

    def front_floor(self, requests: float) -> Range | None:
        """Host time per iteration of a process beside the scheduler's (a served engine's HTTP process streaming
        every running request's token), pipelined with the step whether or not the scheduler's own host work
        overlaps the GPU: an iteration lasts at least this long (workload/host_floor.py); None: none priced apart.
        `front_streams` False: that streaming runs in processes apart from the one taking requests in."""
        return None

    def extra_launches(self, ledger, fp32: bool, per_op: Range | None = None) -> tuple[Range, str] | None:
        """Host time of the kernels a decode step launches beyond the ledger's one per op (`per_op`: the time each
        ledger op pays in the phase), and the sentence that says so; None where it launches what it counts."""
        return None

    def phase_notes(self, arch: ModelArch, decode: bool) -> tuple[str, ...]:
        """Assumptions of a phase the engine's own terms add (e.g. a mixer's host time per layer)."""
        return ()

    # --- memory and batching ----------------------------------------------------------------------------------
    def memory(self, request):
        """What the engine holds for `request` (engines/reserve.py MemoryRequest -> InferenceMemory): by default
        everything allocated on demand, the whole prompt one pass, attention fused."""
        from sizeup.engines.reserve import allocate_on_demand

        return allocate_on_demand(request, allocator=None, tower=(
            True, f"{self.NAME}'s fused attention backend; at this request's inputs", 0))

    @property
    def batching(self) -> Batching:
        return Batching(scheduling="static", basis="one batch of requests per run")

    @property
    def load_policy(self) -> Batching:
        """`batching` with the KV admission the profile states: `kv_reserve_to_completion` 1 reserves a request's
        whole output before it starts (any engine's data file may say so; absent: pages taken as generated);
        `kv_preempt_recompute` 1 admits on the prompt's pages and preempts when the pool runs out
        (`Batching.preempts`, with `kv_admission_watermark`)."""
        policy = self.batching
        if self.profile.value("kv_reserve_to_completion", 0):
            policy = replace(policy, reserve_to_completion=True)
        lag = int(self.profile.value("first_token_lag_steps", 0))
        if lag:
            policy = replace(policy, first_token_lag_steps=lag)
        ahead = int(self.profile.value("schedule_ahead_steps", 0))
        if ahead:
            policy = replace(policy, schedule_ahead_steps=ahead)
        if self.profile.value("kv_preempt_recompute", 0) and not policy.reserve_to_completion:
            policy = replace(policy, preempts=True, kv_watermark=self.profile.value("kv_admission_watermark", 0.0))
        return policy

    # --- placement over several GPUs (issue 28, local engines) -------------------------------------------------
    MULTI_GPU: ClassVar[str] = "tensor"
    """How the engine spreads a model over `--gpus N`: 'tensor' (every layer's matrices split, an all-reduce per
    layer) or 'layers' (consecutive layers per GPU, one GPU busy at a time: ExLlamaV2's gpu_split). Under 'layers'
    a step takes one GPU's time for the whole model and each GPU holds its share of the weights and cache."""

    def tensor_parallel(self, link_kind: str, gpus: int) -> TensorParallel | None:
        """How the engine runs tensor parallelism over `gpus` GPUs joined by a link of kind `link_kind` ('nvlink',
        'xgmi', 'pcie': the link the group of `gpus` sees, price/comm.py for_group: a group larger than an NVLink
        bridge is a PCIe group): its own all-reduce and per-step host time for its workers where it has them (the
        shared peer-memory kernels: engines/peer_all_reduce.py); None: NCCL's ring and no per-worker host time."""
        return None

    # --- serving defaults (issue 28: throughput under load, engine options, default KV format) ------------------
    ENGINE_OPTIONS: ClassVar[dict[str, str]] = {}
    """`--engine-opt KEY[=VALUE]` the engine takes: the option as its own CLI spells it -> the profile setting it
    sets (a bare KEY sets 1). An option not listed is refused in one line naming those listed."""
    SWITCHES: ClassVar[frozenset[str]] = frozenset()
    """The keys of ENGINE_OPTIONS that are on/off switches: KEY, KEY=1 or KEY=0, any other value refused."""
    OPTION_WORDS: ClassVar[dict[str, dict[str, float]]] = {}
    """Keys of ENGINE_OPTIONS whose value is a word (as the engine's CLI spells it) -> the number each sets."""

    def default_kv_dtype(self, weights: str) -> tuple[str, str] | None:
        """(KV cache format, why) the engine stores by default for weights of format `weights`, where that is not
        the activations' 16-bit format (an FP8 checkpoint's FP8 KV cache); None: 16-bit."""
        return None

    def option_notes(self) -> tuple[str, ...]:
        """What the estimate says about the `--engine-opt` settings this execution model was built with."""
        return ()

    # --- launching its server for a plan (engines/launch.py) --------------------------------------------------
    CHECKPOINT: ClassVar[str] = "hf"
    """What a plan's checkpoint is for this engine: 'hf' (a Hugging Face repository) or 'gguf' (a GGUF file, `repo:TAG`)."""

    def launch(self, request) -> Any:
        """The server that carries a plan out (engines/launch.py Launch) for `request` (LaunchRequest); None where
        sizeup lists no server line for the engine."""
        return None

    # --- hooks appended by issue 28's engines (defaults change nothing) ------------------------------------------
    def step_extra(self, arch: ModelArch, ledger, weights: str, decode: bool,
                   tokens: int) -> tuple[Range, str] | None:
        """Time a step spends beyond the ledger's ops and `step_overhead` because of how the engine runs a weight
        format (bitsandbytes: host time per quantized linear, a dequantized 16-bit copy of each weight written and
        read back), with the sentence that says so; None where it runs what the ledger counts. Both phases ask it,
        `tokens` being the step's tokens."""
        return None

    def auto_gpu_layers(self, arch: ModelArch, weights, context: int, batch: int,
                        gpus: int) -> tuple[int, str] | None:
        """Layers the engine itself places on the GPU when the user names none (an offloading engine that sizes the
        split from free memory), with the sentence that says where they went; None: every layer on the device."""
        return None

    def host_expert_layers(self, arch: ModelArch) -> int:
        """The first N layers whose routed experts' weights the engine keeps in host memory and runs on the CPU, the
        rest of those layers (attention, router, shared experts) staying on the device; 0: none (price/memory.py)."""
        return 0

    def host_weights_on_device(self, decode: bool, tokens: int) -> bool:
        """Whether a step of `tokens` tokens copies the expert weights kept in host memory (`host_expert_layers`) to
        the device and multiplies them there (its `step_extra` prices the copy) rather than on the CPU."""
        return False


# --- the registry ---------------------------------------------------------------------------------------------

_REGISTRY: dict[str, type[ExecutionModel]] = {}
_ALIASES: dict[str, str] = {}
_loaded = False


def engine(name: str, *aliases: str) -> Callable[[type[ExecutionModel]], type[ExecutionModel]]:
    """Register an ExecutionModel subclass under `name` (and `aliases`); a name registered twice raises."""

    def register(cls: type[ExecutionModel]) -> type[ExecutionModel]:
        for key in (name, *aliases):
            if key in _REGISTRY or key in _ALIASES:
                raise ValueError(f"engine {key!r} is already registered")
        cls.NAME = name
        _REGISTRY[name] = cls
        _ALIASES.update({a: name for a in aliases})
        return cls

    return register


_DECORATOR = re.compile(r"^@engine\(([^)]*)\)", re.M)
_QUOTED = re.compile(r"""["']([^"']+)["']""")


@lru_cache(maxsize=1)
def _declared() -> dict[str, tuple[str, str]]:
    """Every name and alias an engine file's decorator line declares -> (its engine name, the module), read as
    text (no import)."""
    out: dict[str, tuple[str, str]] = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        for args in _DECORATOR.findall(path.read_text(encoding="utf-8")):
            names = _QUOTED.findall(args)
            for key in names:
                out[key] = (names[0], path.stem)
    return out


def _load_all() -> None:
    global _loaded
    if not _loaded:
        import pkgutil  # only to look past the decorator lines (a test's engine): not at start-up

        _loaded = True
        for module in pkgutil.iter_modules(importlib.import_module(__package__).__path__):
            importlib.import_module(f"{__package__}.{module.name}")


def engine_names() -> list[str]:
    """The registered engines (their names, not aliases), from the files' decorator lines."""
    return sorted({name for name, _ in _declared().values()})


def engine_class(name: str) -> type[ExecutionModel]:
    key = str(name).strip().lower()
    declared = _declared().get(key)
    if declared is None and key not in _REGISTRY and key not in _ALIASES:
        _load_all()  # registered some other way (a test's engine): look everywhere
    if declared is not None and declared[0] not in _REGISTRY:
        importlib.import_module(f"{__package__}.{declared[1]}")
    key = _ALIASES.get(key, declared[0] if declared else key)
    if key not in _REGISTRY:
        known = sorted(set(engine_names()) | set(_REGISTRY))
        raise ConfigError(f"unknown engine {name!r}: expected one of {', '.join(known)}")
    return _REGISTRY[key]


@lru_cache(maxsize=256)
def parse_engine(text: str) -> EngineRef:
    """'vllm@0.10' -> EngineRef('vllm', '0.10'); the name checked against the registry, the release against the
    engine's known releases. Raises a one-line ConfigError naming what was expected."""
    raw = str(text).strip()
    name, sep, version = raw.partition("@")
    cls = engine_class(name)
    if sep and not version.strip():
        raise ConfigError(f"--engine {raw!r}: expected NAME@RELEASE, e.g. {cls.NAME}@{_default_release(cls)}")
    ref = EngineRef(cls.NAME, version.strip() or None)
    if ref.version is not None:
        cls.check_version(ref.version)
    return ref


def _default_release(cls: type[ExecutionModel]) -> str:
    versions = cls.profile_at(None).versions
    return versions.default if versions else "RELEASE"


def _check_version(cls: type[ExecutionModel], version: str) -> None:
    versions = cls.profile_at(None).versions
    if versions is None:
        raise ConfigError(f"--engine {cls.NAME}@{version}: sizeup's data for {cls.NAME} names no releases; "
                          f"use --engine {cls.NAME}")
    if not versions.known(version):
        raise ConfigError(f"--engine {cls.NAME}@{version}: sizeup's data describes {cls.NAME} releases "
                          f"{versions.describe()} (default {versions.default})")


def resolve(spec: str | EngineRef, device: DeviceSpec, *, backend: str | None = None, build_date: str | None = None,
            settings: dict[str, float] | None = None) -> ExecutionModel:
    """The execution model of engine `spec` ('vllm', 'vllm@0.10') on `device`."""
    ref = spec if isinstance(spec, EngineRef) else parse_engine(spec)
    return engine_class(ref.name).build(device, ref.version, backend=backend, build_date=build_date,
                                        settings=settings)


def option_owners(option: str) -> list[str]:
    """The engines that take `option` (a key of OPTIONS), for an error that names them."""
    _load_all()
    return sorted(name for name, cls in _REGISTRY.items() if option in cls.OPTIONS)


def engine_settings(name: str, options: tuple[str, ...]) -> dict[str, float]:
    """`--engine-opt` items ('num-scheduler-steps=10', 'disable-radix-cache') of engine `name` -> the profile
    settings they set; an option the engine does not list, or a value that is not a number, raises one line."""
    cls = engine_class(parse_engine(name).name)
    out: dict[str, float] = {}
    for item in options:
        key, sep, raw = str(item).strip().partition("=")
        key = key.strip().lower().lstrip("-").replace("_", "-")
        if key not in cls.ENGINE_OPTIONS:
            known = ", ".join(sorted(cls.ENGINE_OPTIONS)) or "none"
            raise ConfigError(f"--engine-opt {item!r}: not an option sizeup models for {cls.NAME} (expected one of: "
                              f"{known})")
        words = cls.OPTION_WORDS.get(key)
        try:
            value = float(words[raw.strip().lower().replace("-", "_")]) if words else float(raw) if sep else 1.0
        except (KeyError, ValueError):
            raise ConfigError(f"--engine-opt {item!r}: expected " + (f"{key}=" + " | ".join(words) if words else
                                                                     "KEY or KEY=NUMBER")) from None
        if key in cls.SWITCHES and value not in (0.0, 1.0):
            raise ConfigError(f"--engine-opt {item!r}: {key} is a switch; expected {key}, {key}=1 or {key}=0")
        out[cls.ENGINE_OPTIONS[key]] = value
    return out
