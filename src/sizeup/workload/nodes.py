"""An inference server spread over several nodes (`sizeup estimate --gpus N` past one node's GPUs).

The node: `--gpus-per-node`, else the device's board (data/efficiency/comm.yaml `nodes`): 8 GPUs where the GPU link is
an NVLink switch or a full xGMI mesh, the NVLink domain of a rack-scale system (72); a device not covered there (PCIe
cards, bridges) is taken as one node. The network: `--network-gbps` per node, else comm.yaml `network_gbit_per_gpu`
(one 400 Gb/s NDR HCA per GPU) times the GPUs per node, seen by each GPU as its share (price/comm.py `network_link`).

When the tensor-parallel group spans nodes its collectives run in two levels (price/comm.py `group_collective_time`:
inside the node on the GPU link, 1/g of the message per rank between nodes); a pipeline's send between stages on
different nodes goes over the network. A one-pass all-reduce over peer memory (an engine's own) reaches only the GPUs
that map each other's memory, one node: a group across nodes runs the library's ring. A group inside one node is
priced as before, to the bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sizeup.errors import CatalogError, ConfigError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.hardware.schema import DeviceSpec

__all__ = ["Nodes", "node_layout", "board_gpus", "network_gbit_per_gpu", "stage_crossings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Nodes:
    per_node: int
    """GPUs per node."""
    network_gbit_per_s: float
    """Node-to-node network per node (all its NICs), Gb/s."""

    def network_bytes_per_s_per_gpu(self) -> float:
        return self.network_gbit_per_s * 1e9 / 8 / self.per_node


@lru_cache(maxsize=1)
def _nodes() -> tuple[int, dict[str, int], float]:
    path = builtin_data_dir() / "efficiency" / "comm.yaml"
    entry = read_yaml(path).get("nodes") or {}
    try:
        return (int(entry["gpus_per_node"]), {str(k): int(v) for k, v in (entry.get("domains") or {}).items()},
                float(entry["network_gbit_per_gpu"]))
    except (KeyError, TypeError, ValueError) as e:
        raise CatalogError(f"{path}: malformed nodes entry ({e})") from None


def network_gbit_per_gpu() -> float:
    """The node-to-node network assumed per GPU where neither the user (`--network-gbps`) nor an offer states one,
    Gb/s (comm.yaml `nodes.network_gbit_per_gpu`): inference across nodes and training's data parallel both use it."""
    return _nodes()[2]


def board_gpus(device: DeviceSpec) -> int | None:
    """GPUs per node of `device` as comm.yaml `nodes` states it, or None (not covered: taken as one node)."""
    from sizeup.price.comm import device_link

    board, domains, _ = _nodes()
    if device.id in domains:
        return domains[device.id]
    link = device_link(device)
    if link is None or link.span is not None or link.kind not in ("nvlink", "xgmi"):
        return None
    return board


def node_layout(device: DeviceSpec, gpus: int, gpus_per_node: int | None = None,
                network_gbit_per_s: float | None = None) -> tuple[Nodes | None, str | None]:
    """(the node layout where `gpus` span more than one node, else None; the assumption stated for it)."""
    if gpus_per_node is not None and gpus_per_node < 1:
        raise ConfigError(f"--gpus-per-node {gpus_per_node}: expected a positive integer")
    per_node = gpus_per_node or board_gpus(device)
    if per_node is None or gpus <= per_node:
        return None, None
    per_gpu = network_gbit_per_gpu()
    network = network_gbit_per_s or per_gpu * per_node
    nodes = Nodes(per_node=per_node, network_gbit_per_s=network)
    how = "--gpus-per-node" if gpus_per_node else "the device's board, data/efficiency/comm.yaml nodes"
    net = "--network-gbps" if network_gbit_per_s else f"{per_gpu:g} Gb/s per GPU assumed: one NDR InfiniBand HCA each"
    return nodes, (f"{gpus} GPUs over {-(-gpus // per_node)} nodes of {per_node} ({how}), {network:,.0f} Gb/s between "
                   f"nodes per node ({net}): collectives of a group across nodes run in two levels (inside the node, "
                   f"then 1/{per_node} of the message per GPU over the network); an engine's own all-reduce over peer "
                   f"memory stays inside one node, so such a group runs the library's ring")


def stage_crossings(pp: int, tp: int, per_node: int) -> int:
    """Of the pp − 1 sends between consecutive stages of `tp` GPUs each, those whose two stages sit on different
    nodes (GPUs numbered stage by stage, `per_node` to a node)."""
    return sum(1 for i in range(1, pp) if (i * tp - 1) // per_node != (i * tp) // per_node)
