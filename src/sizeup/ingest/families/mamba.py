"""Mamba (Gu & Dao 2023, arXiv:2312.00752) and Mamba-2 (Dao & Gu 2024, arXiv:2405.21060), as
transformers' `MambaForCausalLM` / `Mamba2ForCausalLM` build them: token embeddings, `num_hidden_layers`
blocks of an RMSNorm and a selective state-space mixer (no attention, no MLP), a final RMSNorm and the
LM head (tied for Mamba by default, untied for Mamba-2). The mixer width is `expand` × hidden
(transformers recomputes `intermediate_size` from it; a config whose `intermediate_size` says otherwise
is contradictory and refused). Each sequence keeps a fixed recurrent state per layer — the conv window
and the scan state — in place of a KV cache."""

from __future__ import annotations

import math

from sizeup.ingest.arch import NO_ATTENTION, NO_MLP, LayerSpec, ModelArch, SSMSpec
from sizeup.ingest.families.fields import CONTEXT, HEAD_DIM, HEADS, HIDDEN, INTERMEDIATE, LAYERS, VOCAB, Bound, Fields
from sizeup.ingest.families.registry import family

STATE = Bound("SSM state size", 4096)
CONV = Bound("conv kernel width", 64)
EXPAND = Bound("SSM expansion factor", 16)
CHUNK = Bound("SSD chunk size", 65536)
STATE_NOTE = ("state-space model: each sequence keeps a fixed recurrent state (conv window + scan state) per layer, "
              "held in the KV-cache dtype; it does not grow with the context")


def _inner(c: Fields, h: int) -> int:
    inner = c.int("expand", bound=EXPAND, default=2) * h
    given = c.optional_int("intermediate_size", bound=INTERMEDIATE)
    if given is not None and given != inner:
        raise c.error("intermediate_size", given, f"expected expand × hidden_size = {inner:,} (transformers builds "
                      f"the mixer at that width)")
    return inner


def _arch(c: Fields, name: str, h: int, ssm: SSMSpec, tie: bool) -> ModelArch:
    layers = c.int("num_hidden_layers", "n_layer", bound=LAYERS)
    return ModelArch(name=name, model_type=c.model_type, hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=(LayerSpec(attention=NO_ATTENTION, mlp=NO_MLP, norms=1, ssm=ssm),) * layers, norm="rms",
                     tie_embeddings=c.flag("tie_word_embeddings", tie),
                     max_context=c.int("max_position_embeddings", bound=CONTEXT, default=CONTEXT.maximum),
                     assumptions=(STATE_NOTE,))


@family("mamba")
def read_mamba(c: Fields, name: str) -> ModelArch:
    h = c.int("hidden_size", "d_model", bound=HIDDEN)
    rank = c.data.get("time_step_rank", "auto")
    dt_rank = math.ceil(h / 16) if rank == "auto" else c.int("time_step_rank", bound=HIDDEN)
    ssm = SSMSpec(version=1, inner=_inner(c, h), state=c.int("state_size", bound=STATE, default=16),
                  conv=c.int("conv_kernel", bound=CONV, default=4), dt_rank=dt_rank,
                  bias=c.flag("use_bias", False), conv_bias=c.flag("use_conv_bias", True))
    return _arch(c, name, h, ssm, tie=True)


@family("mamba2")
def read_mamba2(c: Fields, name: str) -> ModelArch:
    h = c.int("hidden_size", bound=HIDDEN)
    inner = _inner(c, h)
    heads, head_dim = c.int("num_heads", bound=HEADS, default=128), c.int("head_dim", bound=HEAD_DIM, default=64)
    if heads * head_dim != inner:
        raise c.error("num_heads", heads, f"expected num_heads × head_dim ({heads:,} × {head_dim:,}) to equal expand × "
                      f"hidden_size = {inner:,}")
    groups = c.int("n_groups", bound=HEADS, default=8)
    c.divides("n_groups", groups, "num_heads", heads)
    ssm = SSMSpec(version=2, inner=inner, state=c.int("state_size", bound=STATE, default=128),
                  conv=c.int("conv_kernel", bound=CONV, default=4), heads=heads, groups=groups,
                  bias=c.flag("use_bias", False), conv_bias=c.flag("use_conv_bias", True),
                  chunk=c.int("chunk_size", bound=CHUNK, default=256))
    return _arch(c, name, h, ssm, tie=False)
