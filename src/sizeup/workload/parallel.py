"""Parallelism of a training job: data parallel with ZeRO stages 1-3 (FSDP full shard = 3), tensor
parallel (Megatron column/row split, optionally with sequence parallelism), pipeline parallel (1F1B
schedule, bubble (p − 1)/m for m micro-batches; interleaved over v model chunks per GPU, (p − 1)/(v·m),
Narayanan et al. 2021 §2.2), expert parallel for MoE.

What each shards, per GPU:
- weights: ÷ tp (linear layers and the vocabulary), ÷ pp (layers per stage), ÷ dp with ZeRO-3;
  routed experts ÷ ep, and ZeRO shards them only over the dp/ep ranks that hold the same experts;
- gradients: like the weights, ÷ dp from ZeRO-2;
- optimizer state (fp32 master copy and moments): ÷ dp from ZeRO-1.
"""

from __future__ import annotations

from dataclasses import dataclass

from sizeup.errors import ConfigError

__all__ = ["ParallelConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ParallelConfig:
    gpus: int = 1
    nodes: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    zero: int = 0
    vp: int = 1
    """Virtual pipeline stages (model chunks) per GPU: the interleaved 1F1B schedule."""
    sequence_parallel: bool = True
    """With tp > 1, shard the norm/dropout activations along the sequence too (Korthikanti et al. 2022)."""
    tp_overlap: bool = False
    """Tensor-parallel collectives overlapped with the layer's matrix products (Megatron/TE userbuffers,
    PyTorch async TP); False: on the critical path."""

    def __post_init__(self) -> None:
        for name in ("gpus", "nodes", "tp", "pp", "vp", "ep"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name} {getattr(self, name)}: expected a positive integer")
        if self.zero not in (0, 1, 2, 3):
            raise ConfigError(f"--zero {self.zero}: expected 0, 1, 2 or 3")
        if self.gpus % self.nodes:
            raise ConfigError(f"--gpus {self.gpus} is not a multiple of --nodes {self.nodes}")
        if self.gpus % (self.tp * self.pp):
            raise ConfigError(f"--gpus {self.gpus} is not divisible by tp × pp = {self.tp} × {self.pp}")
        if self.tp > self.gpus_per_node:
            raise ConfigError(f"--tp {self.tp} spans nodes ({self.gpus_per_node} GPUs per node): keep tensor "
                              f"parallelism inside a node")
        if self.dp % self.ep:
            raise ConfigError(f"--ep {self.ep} must divide the data-parallel size {self.dp}")

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    @property
    def gpus_per_node(self) -> int:
        return self.gpus // self.nodes

    @property
    def dp_crosses_nodes(self) -> bool:
        return self.nodes > 1 and self.dp > 1

    def check_model(self, heads: int, kv_heads: int, layers: int, experts: int) -> None:
        if heads % self.tp:
            raise ConfigError(f"--tp {self.tp} does not divide the {heads} attention heads")
        if kv_heads % self.tp and self.tp % kv_heads:
            raise ConfigError(f"--tp {self.tp} does not divide the {kv_heads} KV heads (nor is a multiple of them)")
        if self.pp > layers:
            raise ConfigError(f"--pp {self.pp} is more pipeline stages than the {layers} layers")
        if self.vp > 1 and (self.pp == 1 or layers % (self.pp * self.vp)):
            raise ConfigError(f"--vp {self.vp}: needs --pp > 1 and pp × vp dividing the {layers} layers")
        if self.ep > 1 and (not experts or experts % self.ep):
            raise ConfigError(f"--ep {self.ep} must divide the {experts} routed experts")
