"""Count the kernels one eager transformers decode step launches, per module kind (data/engines/hf.yaml eager_kernels).

Builds tiny random Llama and Mamba models (the op sequence of a decode step does not depend on the sizes), runs a
prefill and then one decode forward under a TorchDispatchMode, and counts every aten op that launches a kernel
(views, metadata and allocation-only ops excluded), each op attributed to the innermost module running it. On CPU
the same aten ops dispatch as on CUDA. Mamba's mamba_ssm / causal_conv1d kernels are CUDA-only: their calls in
transformers' MambaMixer (causal_conv1d_update, mamba_selective_state_update) are counted as ONE kernel each, as
on a GPU with the kernels installed (their plain-torch fallback bodies are not counted).

Run from the repo root: python benchmarks/count_hf_eager_kernels.py [--dtype float16]
Needs torch and transformers (not dependencies of sizeup).
"""

from __future__ import annotations

import argparse
from collections import Counter

import torch
import transformers
from torch.utils._python_dispatch import TorchDispatchMode

NO_KERNEL = {"view", "_unsafe_view", "transpose", "t", "unsqueeze", "squeeze", "split", "split_with_sizes",
             "chunk", "slice", "select", "expand", "permute", "as_strided", "alias", "detach", "lift_fresh",
             "empty", "empty_strided", "empty_like", "unbind", "narrow", "_reshape_alias", "reshape",
             "sym_size", "sym_stride", "is_same_size", "lift_fresh_copy", "_to_copy_noop"}


class Counting(TorchDispatchMode):
    def __init__(self, stack):
        super().__init__()
        self.stack, self.ops, self.fused_depth = stack, Counter(), 0
        self.by_module: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if self.fused_depth == 0 and name not in NO_KERNEL:
            self.ops[name] += 1
            self.by_module[self.stack[-1] if self.stack else "<top>"] += 1
        return func(*args, **(kwargs or {}))


def hooked(model):
    stack: list[str] = []
    for mod in model.modules():
        label = type(mod).__name__
        mod.register_forward_pre_hook(lambda m, a, label=label: stack.append(label))  # returns None
        mod.register_forward_hook(lambda m, a, o: None if stack.pop() else None)
    return stack


def fuse(module_ns, names, mode_box):
    """Make each named kernel function count as one launch (its plain-torch fallback uncounted)."""
    for n in names:
        inner = getattr(module_ns, n)

        def wrapped(*a, __inner=inner, __n=n, **k):
            mode = mode_box[0]
            if mode is not None and mode.fused_depth == 0:
                mode.ops[f"{__n} (fused kernel)"] += 1
                mode.by_module[f"{mode.stack[-1]}:{__n}"] += 1
            if mode is not None:
                mode.fused_depth += 1
            try:
                return __inner(*a, **k)
            finally:
                if mode is not None:
                    mode.fused_depth -= 1
        setattr(module_ns, n, wrapped)


def decode_count(model, mode_box) -> Counting:
    stack = hooked(model)
    ids = torch.randint(0, 200, (1, 8))
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True)
        nxt = out.logits[:, -1:].argmax(-1)
        cache = out.past_key_values if hasattr(out, "past_key_values") else None
        kwargs = {"past_key_values": cache} if cache is not None else {}
        if getattr(out, "cache_params", None) is not None:
            kwargs = {"cache_params": out.cache_params}
        mode = Counting(stack)
        mode_box[0] = mode
        with mode:
            model(input_ids=nxt, use_cache=True, cache_position=torch.tensor([ids.shape[1]]), **kwargs)
        mode_box[0] = None
    return mode


def report(title, mode, layers):
    total = sum(mode.ops.values())
    print(f"\n## {title}: {total} kernels per decode step ({layers} layers)\n")
    print("| innermost module | kernels per step | per layer |")
    print("|---|---:|---:|")
    for k, v in sorted(mode.by_module.items(), key=lambda kv: -kv[1]):
        print(f"| {k} | {v} | {v / layers:.2f} |")
    print("\naten ops:", dict(mode.ops.most_common()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="float32")
    dtype = getattr(torch, ap.parse_args().dtype)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, dtype {dtype}")
    torch.manual_seed(0)
    box = [None]
    layers = 4
    llama = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                                     num_attention_heads=4, num_key_value_heads=2, vocab_size=256)
    for impl in ("sdpa", "eager"):
        llama._attn_implementation = impl
        m = transformers.LlamaForCausalLM(llama).to(dtype).eval()
        report(f"Llama, attn_implementation={impl}", decode_count(m, box), layers)
    from transformers.models.mamba import modeling_mamba
    fuse(modeling_mamba, ("causal_conv1d_update", "mamba_selective_state_update"), box)
    mamba = transformers.MambaConfig(hidden_size=64, state_size=16, num_hidden_layers=layers, vocab_size=256)
    m = transformers.MambaForCausalLM(mamba).to(dtype).eval()
    report("Mamba (mamba_ssm / causal_conv1d kernels counted as one launch each)", decode_count(m, box), layers)


if __name__ == "__main__":
    main()
