"""Collectives priced on a link: ring all-reduce moves 2·(n−1)/n of the message over each link,
all-gather and reduce-scatter (n−1)/n, plus a latency per collective (data/efficiency/comm.yaml, measured
with nccl-tests). On a link with a per-step latency (PCIe) the latency grows with the ring: a base plus one
hop per ring step, 2·(n−1) steps for an all-reduce and n−1 for the others, the form of NCCL's own tuning
model (src/graph/tuning.cc: baseLat + nsteps × hwLat), its two terms fitted on nccl-tests runs of 2, 4 and
8 PCIe GPUs. Links without one (NVLink, the network) keep a fixed latency.

An engine may run its own all-reduce instead of NCCL's (one pass over peer memory; the engine's file decides):
`with_latency` gives the link that collective sees.

A fully connected mesh (AMD Instinct MI300X / MI325X: each GPU joined to each of its 7 peers by its own xGMI link,
no switch) gives a group of n ranks n−1 links per GPU, each at its own rate: a collective over 2 GPUs runs on one
link (64 GB/s each way), over 8 on all seven (448 GB/s). RCCL spreads its channels over the direct links, so the
ring formula holds with the per-GPU rate of the links the group uses (`Link.peer_bytes_per_s`).
Where the collective library's all-reduce was timed on the link at a group size (comm.yaml `all_reduce_measured`:
RCCL on 8 MI300X), an all-reduce of that many ranks takes the time measured at its size, log-log between the sizes
timed (`Link.measured`): one efficiency fitted on the plateau prices the mid-size messages of a decode step too fast.

An NVLink bridge (PCIe cards: A40, H100 PCIe / NVL, H800 PCIe: 2 cards; H200 NVL: 2 or 4) joins a few cards, not a
whole server: a group larger than the bridge runs its ring over PCIe between the bridged sets (`Link.span`,
`Link.beyond`; comm.yaml `bridges`), and an engine's own all-reduce sees a PCIe group.

A group spread over several nodes, g ranks on each, runs in two levels (hierarchical all-reduce,
Jia et al. 2018, arXiv:1807.11205; 2D ring, Mikami et al. 2018, arXiv:1811.05233): reduce-scatter
over NVLink inside the node, the collective between nodes on 1/g of the message per rank (each rank
on its own NIC), all-gather inside the node. The node's g NICs then carry the inter-node traffic
together instead of one NIC carrying all of it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from math import log

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.hardware.schema import DeviceSpec
from sizeup.ranges import Range

__all__ = ["Link", "device_link", "network_link", "collective_time", "send_time", "group_collective_time", "ring_steps",
           "with_latency", "for_group", "eager_rank_wait", "expected_max_normal"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    kind: str
    """nvlink | xgmi | pcie"""
    bytes_per_s: float
    """One direction."""
    latency_s: Range
    """Fixed latency per collective (with a hop latency: the base of the ring's latency)."""
    efficiency: Range
    hop_latency_s: Range | None = None
    """Latency added per ring step (PCIe); None: the latency does not grow with the group."""
    peer_bytes_per_s: float | None = None
    """A fully connected mesh: the rate of the one link to each peer (one direction); a group of n ranks drives n−1
    of them at once, up to `bytes_per_s` (all the GPU's links). None: any group sees `bytes_per_s` (a switch)."""
    span: int | None = None
    """An NVLink bridge: the most GPUs it joins; a larger group runs on `beyond`. None: no such bound."""
    beyond: Link | None = None
    """The link a group larger than `span` runs its ring on (the cards' PCIe)."""
    measured: tuple[int, tuple[tuple[float, float], ...]] | None = None
    """The library's all-reduce timed on this link (comm.yaml `all_reduce_measured`): (ranks, ((bytes, seconds), ...)),
    read by `collective_time` for an all-reduce over that many ranks within the sizes timed. None: the formula."""


def for_group(link: Link, n: int) -> Link:
    """`link` as a collective over `n` ranks sees it: on a mesh, the n−1 direct links the group uses; past an NVLink
    bridge's span, the PCIe link between the bridged sets."""
    if link.span is not None and n > link.span and link.beyond is not None:
        return link.beyond
    if link.peer_bytes_per_s is None or n < 2:
        return link
    return replace(link, bytes_per_s=min(link.bytes_per_s, link.peer_bytes_per_s * (n - 1)))


@lru_cache(maxsize=1)
def _mesh() -> tuple[frozenset[str], frozenset[str], int]:
    """(interconnect kinds, architectures, links per GPU) of the fully connected mesh entry (comm.yaml `xgmi`)."""
    path = builtin_data_dir() / "efficiency" / "comm.yaml"
    entry = read_yaml(path)["links"].get("xgmi", {})
    try:
        return (frozenset(entry.get("interconnect_kinds", ())), frozenset(entry.get("architectures", ())),
                int(entry.get("links_per_gpu", 0)))
    except (TypeError, ValueError) as e:
        raise CatalogError(f"{path}: malformed xgmi entry ({e})") from None


@lru_cache(maxsize=1)
def _bridges() -> dict[str, int]:
    """Device id -> the most cards its NVLink bridge joins (comm.yaml `bridges`)."""
    path = builtin_data_dir() / "efficiency" / "comm.yaml"
    try:
        return {str(k): int(v) for k, v in (read_yaml(path).get("bridges", {}).get("cards", {}) or {}).items()}
    except (AttributeError, TypeError, ValueError) as e:
        raise CatalogError(f"{path}: malformed bridges entry ({e})") from None


@lru_cache(maxsize=8)
def _measured(name: str, architecture: str) -> tuple[int, tuple[tuple[float, float], ...]] | None:
    """A link's measured all-reduce times (comm.yaml `<name>.all_reduce_measured`: ranks and [bytes, us] points) where
    they were read for the device's `architecture`."""
    path = builtin_data_dir() / "efficiency" / "comm.yaml"
    entry = (read_yaml(path)["links"].get(name) or {}).get("all_reduce_measured")
    if not entry or architecture not in entry.get("architectures", ()):
        return None
    try:
        points = tuple(sorted((float(b), float(us) * 1e-6) for b, us in entry["points_bytes_us"]))
        return int(entry["ranks"]), points
    except (KeyError, TypeError, ValueError) as e:
        raise CatalogError(f"{path}: malformed {name}.all_reduce_measured ({e})") from None


@lru_cache(maxsize=1)
def _links() -> dict[str, tuple[Range, Range, Range | None]]:
    path = builtin_data_dir() / "efficiency" / "comm.yaml"
    data = read_yaml(path)
    try:
        return {name: (Range.parse(v["latency_s"], f"{path}: {name}.latency_s"),
                       Range.parse(v["bandwidth_efficiency"], f"{path}: {name}.bandwidth_efficiency"),
                       Range.parse(v["hop_latency_s"], f"{path}: {name}.hop_latency_s")
                       if "hop_latency_s" in v else None)
                for name, v in data["links"].items()}
    except (KeyError, TypeError, ValueError) as e:
        raise CatalogError(f"{path}: malformed link entry ({e})") from None


def device_link(device: DeviceSpec) -> Link | None:
    """The GPU-to-GPU link of a device: its NVLink (half the quoted bidirectional rate per direction), the xGMI
    mesh of an 8-GPU AMD Instinct platform (the quoted rate over its links, each at half its share per direction),
    else its PCIe host link (an AMD GPU's with RCCL's latency); None when the catalog knows neither."""
    links = _links()
    kinds, archs, per_gpu = _mesh()
    if (device.interconnect is not None and device.interconnect.kind in kinds and device.architecture in archs
            and per_gpu > 0):
        latency, eff, hop = links["xgmi"]
        return Link(kind="xgmi", bytes_per_s=device.interconnect.bytes_per_s / 2, latency_s=latency, efficiency=eff,
                    hop_latency_s=hop, peer_bytes_per_s=device.interconnect.bytes_per_s / 2 / per_gpu,
                    measured=_measured("xgmi", device.architecture))
    pcie = "pcie_rccl" if device.vendor == "amd" and "pcie_rccl" in links else "pcie"  # AMD GPUs run RCCL
    host = None
    if device.pcie_bytes_per_s:
        latency, eff, hop = links[pcie]
        host = Link(kind="pcie", bytes_per_s=device.pcie_bytes_per_s, latency_s=latency, efficiency=eff,
                    hop_latency_s=hop)
    if device.interconnect is not None and device.interconnect.kind.startswith("nvlink"):
        latency, eff, hop = links["nvlink"]
        span = _bridges().get(device.id) if host is not None else None
        return Link(kind="nvlink", bytes_per_s=device.interconnect.bytes_per_s / 2, latency_s=latency, efficiency=eff,
                    hop_latency_s=hop, span=span, beyond=host if span else None)
    if host is not None:
        return host
    if device.interconnect is not None:
        latency, eff, hop = links[pcie]
        return Link(kind=device.interconnect.kind, bytes_per_s=device.interconnect.bytes_per_s / 2, latency_s=latency,
                    efficiency=eff, hop_latency_s=hop)
    return None


def with_latency(link: Link, latency_s: Range) -> Link:
    """`link` as a collective of fixed latency `latency_s` sees it (an engine's own all-reduce: one pass, no ring
    steps), its bandwidth unchanged: the library's measured times (`Link.measured`) no longer apply."""
    return replace(link, latency_s=latency_s, hop_latency_s=None, measured=None)


def network_link(bytes_per_s_per_gpu: float) -> Link:
    """The node-to-node network (InfiniBand / RoCE) as seen by one GPU: its share of the node's NICs."""
    latency, eff, hop = _links()["network"]
    return Link(kind="network", bytes_per_s=bytes_per_s_per_gpu, latency_s=latency, efficiency=eff, hop_latency_s=hop)


def ring_steps(kind: str, n: int) -> int:
    """Steps of a ring collective over `n` ranks (NCCL's nsteps): 2·(n−1) for an all-reduce, n−1 for the others."""
    return 2 * (n - 1) if kind == "all_reduce" else n - 1


def collective_time(kind: str, size_bytes: float, n: int, link: Link) -> Range:
    """Time of one collective over `n` devices of a message of `size_bytes` (the full tensor)."""
    if n <= 1 or size_bytes <= 0:
        return Range(0.0, 0.0, 0.0)
    factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
              "all_to_all": (n - 1) / n}[kind]
    ring = _transfer(factor * size_bytes, for_group(link, n), ring_steps(kind, n))
    timed = _timed(link, n, size_bytes) if kind == "all_reduce" else None
    if timed is None:
        return ring
    return Range(min(ring.low, timed), timed, max(ring.high, timed))


def _timed(link: Link, n: int, size_bytes: float) -> float | None:
    """The all-reduce of `size_bytes` over `n` ranks as the link's measured series times it (log-log between the two
    sizes around it; a message below the smallest timed takes its time), or None: no series for `n` ranks, or a
    message past the largest timed (the ring formula, fitted on the plateau, holds there)."""
    if link.measured is None or link.measured[0] != n:
        return None
    points = link.measured[1]
    if size_bytes > points[-1][0]:
        return None
    if size_bytes <= points[0][0]:
        return points[0][1]
    for (b0, t0), (b1, t1) in zip(points, points[1:]):
        if b0 <= size_bytes <= b1:
            w = log(size_bytes / b0) / log(b1 / b0)
            return t0 * (t1 / t0) ** w
    return None


def send_time(size_bytes: float, link: Link) -> Range:
    """One point-to-point send of `size_bytes` over `link` (a pipeline stage's hidden states to the next): the
    volume at the link's rate plus its base latency, no ring steps."""
    return _transfer(size_bytes, for_group(link, 2), 0)


def _transfer(volume: float, link: Link, steps: int) -> Range:
    """`volume` bytes sent by each rank over `link` in a ring of `steps` steps, plus the link's latency."""
    lat = link.latency_s if link.hop_latency_s is None else link.latency_s + link.hop_latency_s.scale(steps)
    return Range(volume / (link.bytes_per_s * link.efficiency.high) + lat.low,
                 volume / (link.bytes_per_s * link.efficiency.typical) + lat.typical,
                 volume / (link.bytes_per_s * link.efficiency.low) + lat.high)


def group_collective_time(kind: str, size_bytes: float, n: int, per_node: int, intra: Link | None,
                          inter: Link | None) -> Range:
    """`collective_time` for a group of `n` ranks with `per_node` of them on each node: one level on
    `intra` when the group fits in a node, else two levels (intra-node, then 1/per_node of the message
    between nodes on `inter`). A missing link falls back to the other one as a flat ring."""
    per_node = max(1, min(per_node, n))
    if inter is None or per_node >= n:
        link = intra or inter
        return collective_time(kind, size_bytes, n, link) if link else Range(0.0, 0.0, 0.0)
    if intra is None or per_node == 1:
        return collective_time(kind, size_bytes, n, inter)
    nodes = -(-n // per_node)
    if kind == "all_to_all":  # each rank sends 1/n of its message to every other rank
        return (_transfer(size_bytes * (n - per_node) / n, inter, nodes - 1)
                + _transfer(size_bytes * (per_node - 1) / n, for_group(intra, per_node), per_node - 1))
    inside = {"all_reduce": ("reduce_scatter", "all_gather"), "all_gather": ("all_gather",),
              "reduce_scatter": ("reduce_scatter",)}[kind]
    return sum((collective_time(k, size_bytes, per_node, intra) for k in inside),
               collective_time(kind, size_bytes / per_node, nodes, inter))


def expected_max_normal(n: int) -> float:
    """E[max of n independent standard normal draws] (0 for one; 0.564 for 2, 1.029 for 4, 1.424 for 8): the
    integral of x · n φ(x) Φ(x)^(n−1), by the midpoint rule on [−8, 8]."""
    if n <= 1:
        return 0.0
    return _expected_max(n)


@lru_cache(maxsize=64)
def _expected_max(n: int) -> float:
    from math import erf, exp, pi, sqrt

    steps, lo, hi = 4000, -8.0, 8.0
    h = (hi - lo) / steps
    total = 0.0
    for i in range(steps):
        x = lo + (i + 0.5) * h
        total += x * n * exp(-x * x / 2) / sqrt(2 * pi) * (0.5 * (1 + erf(x / sqrt(2)))) ** (n - 1)
    return total * h


def eager_rank_wait(n: int, vendor: str) -> Range | None:
    """Time one collective over `n` ranks waits for the latest rank where each rank's host launches its kernels
    eagerly and the GPUs run at their hosts' pace (comm.yaml eager_rank_wait: measured at 8 ranks, scaled by the
    expected maximum of n independent normal drifts); None for a vendor whose collective library no figure was
    read for."""
    wait, ranks, vendors = _eager_wait()
    if vendor not in vendors:
        return None
    if n <= 1:
        return Range(0.0, 0.0, 0.0)
    return wait.scale(expected_max_normal(n) / expected_max_normal(ranks))


@lru_cache(maxsize=1)
def _eager_wait() -> tuple[Range, int, frozenset[str]]:
    path = builtin_data_dir() / "efficiency" / "comm.yaml"
    entry = read_yaml(path).get("eager_rank_wait") or {}
    try:
        return (Range.parse(entry["wait_s"], f"{path}: eager_rank_wait.wait_s"), int(entry["ranks"]),
                frozenset(entry["vendors"]))
    except (KeyError, TypeError, ValueError) as e:
        raise CatalogError(f"{path}: malformed eager_rank_wait entry ({e})") from None
