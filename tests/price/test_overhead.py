"""Runtime overhead: the third bound. Kernel counts per runtime, host time per kernel, graph launches."""

from dataclasses import replace

import re

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ledger import Ledger, OpKind, OpRecord
from sizeup.price.efficiency import Efficiency, calibrated
from sizeup.engines.runtimes import get_runtime, runtime_names
from sizeup.price.overhead import bytes_under, launches_under
from sizeup.price.roofline import LedgerArrays, price
from sizeup.ranges import Range

CATALOG = load_catalog(include_user=False)
T4 = CATALOG.devices["t4"]


def _op(kind, flops=10**6, matmul=0):
    return OpRecord(op=f"aten.{kind.value}", kind=kind, scope="m", flops=flops, matmul_flops=matmul,
                    bytes_read=10**4, bytes_written=10**4, dtype="fp16")


# a conv block: conv, batch-norm, relu (what ResNet-50 repeats 49 times)
BLOCK = Ledger(ops=[_op(OpKind.CONV, 10**7, 10**7),
                    replace(_op(OpKind.NORM), op="aten._native_batch_norm_legit_no_training"),
                    _op(OpKind.ELEMENTWISE)])


def test_every_runtime_of_the_issue_is_in_the_table_with_sources():
    names = runtime_names()
    for rid in ("pytorch-eager", "torch-compile", "cuda-graphs", "onnxruntime", "tensorrt", "llama-cpp", "mlx"):
        assert rid in names
        assert get_runtime(rid).sources and all(
            re.search(r"read 2026-12-0[3-5]", s) for s in get_runtime(rid).sources)  # gathered, or re-read on a refit


def test_kernel_counts_follow_the_runtime():
    base = list(LedgerArrays.from_ledger(BLOCK).launches)
    assert launches_under(get_runtime("pytorch-eager"), BLOCK, base) == [1, 1, 1]
    assert launches_under(get_runtime("pytorch-eager-amp"), BLOCK, base) == [2, 1, 1]  # the weight cast
    assert launches_under(get_runtime("tensorrt"), BLOCK, base) == [1, 0, 0]  # conv+bn+relu: one kernel
    assert launches_under(get_runtime("torch-compile"), BLOCK, base) == [2, 0, 0]  # extern conv + fused epilogue


def test_a_row_reducing_norm_is_not_folded_into_the_matrix_kernel():
    """A layer norm needs the whole row, which one output tile of the matmul does not hold: it stays a kernel
    (TensorRT's BERT runs it as SkipLayerNorm) with its own traffic; the elementwise op still folds."""
    block = Ledger(ops=[_op(OpKind.MATMUL, 10**7, 10**7), replace(_op(OpKind.NORM), op="aten.native_layer_norm"),
                        _op(OpKind.ELEMENTWISE)])
    arrays = LedgerArrays.from_ledger(block)
    trt = get_runtime("tensorrt")
    assert launches_under(trt, block, list(arrays.launches)) == [1, 1, 0]
    moved = bytes_under(trt, block, list(arrays.bytes))
    assert moved[1] == arrays.bytes[1] > 0 and moved[2] == 0


def test_small_ops_on_a_gpu_are_bound_by_the_host_time_per_kernel():
    eager = price(BLOCK, T4, runtime=get_runtime("pytorch-eager"))
    per_op = get_runtime("pytorch-eager").per_op_s
    assert list(eager.bound()) == ["overhead"] * 3
    # asynchronous device: each op takes max(gpu time, host time), so the host time is the whole forward:
    # 4 kernels, the fp16 conv on NCHW tensors running cuDNN's NHWC transpose first (price.conv_algos)
    assert eager.total_s.typical == pytest.approx(4 * per_op.typical)
    assert eager.total_s.low == pytest.approx(4 * per_op.low)
    assert eager.overhead_bound_s == pytest.approx(eager.total_s.typical)


def test_a_graph_runtime_adds_one_launch_per_forward():
    graphs = price(BLOCK, T4, runtime=get_runtime("cuda-graphs"))
    assert graphs.fixed_s == get_runtime("cuda-graphs").per_graph_s
    plain = price(BLOCK, T4)
    assert graphs.total_s.typical < plain.total_s.typical


def test_tensorrt_replayed_from_a_cuda_graph_fuses_as_tensorrt_and_launches_as_a_graph():
    """trtexec --useCudaGraph: the engine's kernels (conv+bn+relu fused, as plain TensorRT) replayed from one
    graph: the graph replay cost per kernel, below one C++ enqueue, plus one graph launch per forward."""
    trt, graph = get_runtime("tensorrt"), get_runtime("tensorrt-cuda-graphs")
    base = list(LedgerArrays.from_ledger(BLOCK).launches)
    assert launches_under(graph, BLOCK, base) == launches_under(trt, BLOCK, base) == [1, 0, 0]
    assert graph.per_op_s == get_runtime("cuda-graphs").per_op_s
    assert graph.per_op_s.high < trt.per_op_s.low
    assert price(BLOCK, T4, runtime=graph).fixed_s == get_runtime("cuda-graphs").per_graph_s


def test_on_a_cpu_the_host_time_adds_to_the_op():
    cpu = next(d for d in CATALOG.devices.values() if d.kind == "cpu")
    eager = price(BLOCK, cpu, runtime=get_runtime("pytorch-eager"))
    assert eager.efficiency.overhead_s == get_runtime("pytorch-eager").per_op_s_cpu
    no_overhead = price(BLOCK, cpu, eager.efficiency.with_overrides(overhead_s=Range(0, 0, 0)))
    assert eager.total_s.typical == pytest.approx(no_overhead.total_s.typical + 3 * eager.efficiency.overhead_s.typical)


def test_a_calibrated_overhead_wins_over_the_table():
    measured = Range(2e-4, 2e-4, 2e-4)
    eff = Efficiency(tensor={k: Range(0.5, 0.5, 0.5) for k in ("matmul", "conv", "attention")},
                     vector=Range(0.5, 0.5, 0.5), memory=Range(0.8, 0.8, 0.8), overhead_s=measured, origin="local")
    with calibrated({T4.id: eff}):
        result = price(BLOCK, T4, runtime=get_runtime("pytorch-eager"))
    assert result.efficiency.overhead_s == measured


def test_an_unknown_runtime_is_refused_naming_the_choices():
    with pytest.raises(ConfigError, match="runtime 'pytorch-lazy' is unknown: expected one of pytorch-eager"):
        get_runtime("pytorch-lazy")


def test_an_inductor_epilogue_kernel_adds_its_traffic_after_the_conv_instead_of_overlapping_it():
    """torch.compile without freezing: the extern conv, then one generated pointwise kernel (batch norm,
    relu) that reads and writes the conv's output once; the second kernel starts when the first ends."""
    big = Ledger(ops=[OpRecord(op="aten.convolution", kind=OpKind.CONV, scope="m", flops=10**12, matmul_flops=10**12,
                               bytes_read=10**8, bytes_written=10**8, dtype="fp16"),
                      replace(_op(OpKind.NORM), op="aten._native_batch_norm_legit_no_training")])
    compiled = price(big, T4, runtime=get_runtime("torch-compile"))
    conv_alone = price(Ledger(ops=big.ops[:1]), T4, runtime=get_runtime("tensorrt"))  # fused, no epilogue
    epilogue_s = 2 * 10**8 / (T4.memory_bandwidth_bytes_per_s * compiled.efficiency.memory.typical)
    assert compiled.time["typical"][0] == pytest.approx(conv_alone.time["typical"][0] + epilogue_s)
    assert compiled.memory[1] == 0 and compiled.arrays.launches[1] == 0  # the norm moved into the epilogue
