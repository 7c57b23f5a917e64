"""Where the weights of an offloading engine run: the layers it keeps on the device, the rest on the host CPU
(`--gpu-layers`, or the engine's own split), and the routed experts an engine keeps in host memory
(`ExecutionModel.host_expert_layers`) while the rest of their layers stay on the device.

A step then runs its work one part after another, the device's share at the device's speed and the host's at the
host's (workload/inference.py `_split_phase`: time = share x each device's time for the whole model). Whole layers
off the device are shared by layer count (as before); routed experts in host memory by the bytes a decoded token
reads there (price/memory.py `host_read_share`: each expert tensor at top-k / experts, the experts a token is routed
to), which for a MoE model is far below the experts' share of the memory they take."""

from __future__ import annotations

from sizeup.hardware.schema import DeviceSpec
from sizeup.price.memory import host_read_share

__all__ = ["host_split", "host_experts", "on_device_share"]


def host_split(arch, fmt, cfg, model, device: DeviceSpec, cpu: DeviceSpec | None, with_threads
               ) -> tuple[float, DeviceSpec | None, list[str]]:
    """(share of a step's work on the device, the host CPU that runs the rest or None, the sentences saying so).
    A prompt step whose engine copies the host-held experts to the device (`host_weights_on_device`) runs there
    whole: `on_device_share` says so per step."""
    n = arch.num_layers
    experts = host_experts(model, arch, device)
    layers_off = cfg.gpu_layers is not None and cfg.gpu_layers < n and device.kind != "cpu"
    if not layers_off and not experts:
        return 1.0, None, []
    if experts:
        fraction = float(getattr(model, "host_expert_fraction", lambda a: 1.0)(arch))
        share = host_read_share(arch, fmt, cfg.gpu_layers if layers_off else None, experts, fraction)
        held = "" if fraction >= 1.0 else f"{fraction:.1%} of "
        where = (f"{held}the routed experts of the first {experts} of {n} layers stay in CPU RAM on "
                 f"{'the host' if cpu is None else cpu.id} and run there ({share:.1%} of the weight bytes a decoded "
                 f"token reads: each expert tensor at top-k / experts); attention, router and shared weights on "
                 f"{device.id}")
    else:
        share, where = 1.0 - cfg.gpu_layers / n, f"{n - cfg.gpu_layers} of {n} layers stay on the CPU"
    if cpu is None:
        return 1.0 - share, None, [f"{where}, but no CPU device is known ({device.id} names no host_cpu): name it "
                                   f"with --cpu NAME; their compute is unknown"]
    host, notes = with_threads(cpu, cfg.threads)
    if experts:
        notes.append(f"{model.name} expert offload: {where}; time = {1 - share:.1%} x {device.id}'s time for the "
                     f"whole model + {share:.1%} x {cpu.id}'s")
    else:
        notes.append(f"{model.name} partial offload: {cfg.gpu_layers} of {n} layers on {device.id}, {n - cfg.gpu_layers} "
                     f"on {cpu.id} ({cpu.name}); time = layer share x each device's time for the whole model "
                     f"(embedding and output layer shared in proportion)")
    return 1.0 - share, host, notes


def host_experts(model, arch, device: DeviceSpec) -> int:
    """Layers whose routed experts the engine keeps in host memory on `device` (0 on a CPU: everything is there)."""
    return model.host_expert_layers(arch) if device.kind != "cpu" else 0


def on_device_share(share: float, model, arch, device: DeviceSpec, cfg, decode: bool, tokens: int) -> float:
    """The share of this step on the device: all of it where only experts are held in host memory and the engine
    copies them to the device for a step this large (their copy then priced by its `step_extra`), else `share`."""
    layers_off = cfg.gpu_layers is not None and cfg.gpu_layers < arch.num_layers
    if share < 1.0 and not layers_off and host_experts(model, arch, device) \
            and model.host_weights_on_device(decode, tokens):
        return 1.0
    return share
