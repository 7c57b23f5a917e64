"""ONNX ingestion: a model read from its ONNX export costs what its trace costs, op convention for op
convention; where an exporter decomposes or fuses differently, the difference is stated and exact."""

import json
import random

import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

from onnx import TensorProto, helper  # noqa: E402

from sizeup.errors import IngestError  # noqa: E402
from sizeup.examples import zoo  # noqa: E402
from sizeup.ingest.onnx_graph import onnx_ledger  # noqa: E402
from sizeup.ingest.torch_trace import InputSpec, trace_module  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning",
                                        "ignore::FutureWarning", "ignore:Converting a tensor to a Python")

C2F_SHAPE = (1, 64, 64, 64)
GPT2_SHAPE = (1, 32, 768)
C2F_CONV_FLOPS = 872_415_232  # reference write-up, section 2.2 (as in test_torch_trace.py)
C2F_CONV_OUTPUTS = (128 + 64 + 64 + 128) * 64 * 64  # elements written by C2f's four convolutions


def export(factory, shape, path, *, exporter="torchscript", keep_batch_norm=False):
    """Export with random values in every parameter and buffer: exporters merge initializers of equal
    value (fresh LayerNorm weights are all ones), which would merge distinct parameters. The batch
    dimension is symbolic ("batch")."""
    model = factory().eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for t in [*model.parameters(), *model.buffers()]:
            if t.is_floating_point():
                t.copy_(torch.rand(t.shape, generator=generator) + 0.5)
    x = torch.randn(*shape)
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")
        torch.onnx.export(model, (x,), str(path), dynamo=True, input_names=["x"], verbose=False,
                          dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    else:
        training = torch.onnx.TrainingMode.PRESERVE if keep_batch_norm else torch.onnx.TrainingMode.EVAL
        torch.onnx.export(model, (x,), str(path), dynamo=False, input_names=["x"], training=training,
                          dynamic_axes={"x": {0: "batch"}})
    return path


def trace(factory, shape):
    return trace_module(factory, [InputSpec(shape=shape)])


@pytest.fixture(scope="module")
def c2f_with_bn(tmp_path_factory):
    return export(zoo.c2f, C2F_SHAPE, tmp_path_factory.mktemp("onnx") / "c2f_bn.onnx", keep_batch_norm=True)


@pytest.fixture(scope="module")
def c2f_trace():
    return trace(zoo.c2f, C2F_SHAPE)


@pytest.fixture(scope="module")
def gpt2_trace():
    return trace(zoo.GPT2Block, GPT2_SHAPE)


# ---- C2f -------------------------------------------------------------------------------------

def conv_products(ledger):
    return sum(o.matmul_flops for o in ledger.ops if o.kind.value == "conv")


def test_c2f_with_batch_norm_kept_matches_the_trace_exactly(c2f_with_bn, c2f_trace):
    ledger = onnx_ledger(c2f_with_bn, dims={"batch": 1})
    assert ledger.by_kind()["conv"].flops == C2F_CONV_FLOPS
    assert ledger.totals().matmul_flops == c2f_trace.totals().matmul_flops == C2F_CONV_FLOPS
    assert ledger.totals().flops == c2f_trace.totals().flops
    assert ledger.totals().uncounted_ops == 0
    assert ledger.params == c2f_trace.params == 107_264
    onnx_scopes, traced_scopes = ledger.by_scope(), c2f_trace.by_scope()
    for scope, totals in traced_scopes.items():  # "cv1.conv", "m.0.cv1.bn", "m.0", ...: same FLOPs and params
        assert (onnx_scopes[scope].flops, onnx_scopes[scope].params) == (totals.flops, totals.params), scope
    assert onnx_scopes["m.0.cv1.conv"].flops == 301_989_888


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_c2f_with_batch_norm_folded_into_the_convs(tmp_path, c2f_trace, exporter):
    ledger = onnx_ledger(export(zoo.c2f, C2F_SHAPE, tmp_path / "c2f.onnx", exporter=exporter), dims={"batch": 1})
    assert conv_products(ledger) == C2F_CONV_FLOPS
    assert ledger.totals().matmul_flops == c2f_trace.totals().matmul_flops
    # Both exporters fold eval-mode BatchNorm into the conv's weights and a bias: BN's 4 FLOPs per
    # element (traced) become the conv's bias add, 1 per element.
    assert ledger.totals().flops == c2f_trace.totals().flops - 3 * C2F_CONV_OUTPUTS
    assert ledger.totals().uncounted_ops == 0


# ---- GPT-2 block ---------------------------------------------------------------------------

@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_gpt2_block_matches_the_trace_up_to_the_decomposed_attention(tmp_path, gpt2_trace, exporter):
    ledger = onnx_ledger(export(zoo.GPT2Block, GPT2_SHAPE, tmp_path / "gpt2.onnx", exporter=exporter),
                         dims={"batch": 1})
    assert ledger.totals().matmul_flops == gpt2_trace.totals().matmul_flops
    assert ledger.totals().uncounted_ops == 0
    assert ledger.params == gpt2_trace.params
    onnx_scopes = ledger.by_scope()
    for scope in ("ln_1", "c_attn", "c_proj", "ln_2", "c_fc", "mlp_proj"):  # LayerNorm 8/element, linear + bias
        assert onnx_scopes[scope].flops == gpt2_trace.by_scope()[scope].flops, scope
    # The trace sees one fused SDPA op (2·S·D + 5·S + 2·S·Dv); both exporters write it out as MatMul,
    # Softmax, MatMul plus a multiply of q and of k by √scale (1 per element each) and the add of the
    # causal mask to the scores (1 per score). The mask itself is built from shapes only and is folded.
    # GELU(tanh) is exported as one Gelu op (opset 20), 9 per element as traced.
    b, s, h = GPT2_SHAPE
    heads = 12
    assert ledger.totals().flops == gpt2_trace.totals().flops + 2 * b * s * h + b * heads * s * s


# ---- symbolic dimensions -----------------------------------------------------------------------

@pytest.mark.parametrize("factory,shape", [(zoo.c2f, C2F_SHAPE), (zoo.GPT2Block, GPT2_SHAPE)])
def test_binding_the_batch_scales_the_cost(tmp_path, factory, shape):
    path = export(factory, shape, tmp_path / "model.onnx")
    one = onnx_ledger(path, dims={"batch": 1}).totals()
    four = onnx_ledger(path, dims={"batch": 4}).totals()
    assert four.flops == 4 * one.flops
    assert four.matmul_flops == 4 * one.matmul_flops
    assert four.params == one.params


def test_an_unbound_symbolic_dimension_is_named(c2f_with_bn):
    with pytest.raises(IngestError, match=r"'batch'.*input 'x'") as err:
        onnx_ledger(c2f_with_bn)
    assert "\n" not in str(err.value)


def test_a_dims_name_that_matches_nothing_is_rejected(c2f_with_bn):
    with pytest.raises(IngestError, match=r"'batsh'.*'batch'"):
        onnx_ledger(c2f_with_bn, dims={"batch": 1, "batsh": 4})
    with pytest.raises(IngestError, match="positive integer"):
        onnx_ledger(c2f_with_bn, dims={"batch": 0})


# ---- bad files -------------------------------------------------------------------------------

def test_a_malformed_file_is_one_line_naming_it(tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(random.Random(0).randbytes(4096))
    with pytest.raises(IngestError, match="garbage.onnx") as err:
        onnx_ledger(path)
    assert "\n" not in str(err.value)


def test_a_missing_file_is_an_ingest_error(tmp_path):
    with pytest.raises(IngestError, match="ONNX file .* does not exist"):
        onnx_ledger(tmp_path / "absent.onnx")


# ---- hand-built graphs: attributes, dtypes, ops without a formula ----------------------------

def save(tmp_path, nodes, inputs, outputs, initializers=(), opset=18):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    path = tmp_path / "hand.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    return path


def test_gemm_honours_trans_a_and_trans_b(tmp_path):
    m, k, n = 8, 16, 32
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT16, [k, m])  # transA: A is [K, M]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)
    w = helper.make_tensor("w", TensorProto.FLOAT16, [n, k], [0.0] * (n * k))  # transB: B is [N, K]
    c = helper.make_tensor("c", TensorProto.FLOAT16, [n], [0.0] * n)
    gemm = helper.make_node("Gemm", ["a", "w", "c"], ["y"], name="/fc/Gemm", transA=1, transB=1)
    ledger = onnx_ledger(save(tmp_path, [gemm], [a], [y], [w, c]))
    (op,) = ledger.ops
    assert (op.op, op.scope, op.dtype) == ("onnx.Gemm", "fc", "fp16")
    assert op.matmul_flops == 2 * m * n * k
    assert op.flops == 2 * m * n * k + m * n  # + the bias add
    assert op.bytes_read == 2 * (k * m + n * k + n) and op.bytes_written == 2 * m * n
    assert ledger.params_by_scope == {"fc": n * k + n}


def test_an_op_without_a_formula_counts_bytes_not_flops(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 10])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Hardmax", ["x"], ["h"], name="/head/Hardmax"),
             helper.make_node("Pow", ["h", "two"], ["y"], name="/head/Pow"),
             helper.make_node("Constant", [], ["two"], value_float=2.0)]  # out of order: sorted topologically
    ledger = onnx_ledger(save(tmp_path, nodes, [x], [y]))
    assert [o.op for o in ledger.ops] == ["onnx.Hardmax", "onnx.Constant", "onnx.Pow"]
    hardmax, constant, power = ledger.ops
    assert not hardmax.flops_counted and hardmax.bytes_read == hardmax.bytes_written == 160
    assert ledger.uncounted_ops() == {"onnx.Hardmax": 1}
    assert constant.kind.value == "view" and constant.bytes_read == constant.bytes_written == 0
    assert power.flops == 40  # x**2: one multiply per element, as aten.pow


# ---- the CLI: `sizeup flops` and `sizeup roofline` take MODEL.onnx with --dim NAME=SIZE ------------------------


def test_cli_flops_and_roofline_on_an_onnx_file(c2f_with_bn, c2f_trace, capsys):
    from sizeup.cli.main import main

    assert main(["flops", str(c2f_with_bn), "--dim", "batch=2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"]["flops"] == 2 * c2f_trace.totals().flops  # batch-norm kept: equal to the trace per sample
    assert main(["roofline", str(c2f_with_bn), "--dim", "batch=2", "--device", "h100-sxm", "--json"]) == 0
    priced = json.loads(capsys.readouterr().out)
    assert priced["devices"][0]["time_s"]["typical"] > 0


@pytest.mark.parametrize(("argv", "message"), [
    ([], "unbound symbolic dimension 'batch'"),
    (["--dim", "batch=0"], "--dim 'batch=0': expected NAME=SIZE with a positive integer size"),
    (["--dim", "batch=2", "--input", "1x64x64x64"], "an ONNX graph carries its input shapes"),
    (["--dim", "batch=2", "--train"], "priced for inference only"),
])
def test_cli_bad_onnx_arguments_are_one_line_with_exit_code_1(c2f_with_bn, capsys, argv, message):
    from sizeup.cli.main import main

    assert main(["flops", str(c2f_with_bn), *argv]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_cli_estimate_on_an_onnx_file(c2f_with_bn, c2f_trace, capsys):
    from sizeup.cli.main import main

    assert main(["estimate", str(c2f_with_bn), "--device", "rtx-4090", "--batch", "4", "--sweep", "1,4",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["batch_dim"] == "batch" and data["flops"] == 4 * c2f_trace.totals().flops
    assert data["fits"] and data["latency_s"]["low"] <= data["latency_s"]["typical"] <= data["latency_s"]["high"]
    assert data["throughput_per_s"]["typical"] == pytest.approx(4 / data["latency_s"]["typical"])
    one, four = data["batch_sweep"]
    assert four["peak_memory_bytes"] == data["peak_memory_bytes"] > one["peak_memory_bytes"]
    params = data["memory"]["by_category"]["parameter"]
    assert (four["peak_memory_bytes"] - params) == pytest.approx(4 * (one["peak_memory_bytes"] - params), rel=0.01)
    assert main(["estimate", str(c2f_with_bn), "--device", "rtx-4090"]) == 0
    assert "peak live memory" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["--gpus", "2"], "an ONNX graph is estimated on one device"),
    (["--dim", "batch=2"], "is the batch dimension"),
    (["--batch", "0"], "--batch 0: expected a positive integer"),
])
def test_cli_estimate_bad_onnx_arguments(c2f_with_bn, capsys, argv, message):
    from sizeup.cli.main import main

    assert main(["estimate", str(c2f_with_bn), "--device", "rtx-4090", *argv]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


# ---- node order -------------------------------------------------------------------------------------------------

def _chain(n: int, reverse: bool, path):
    """x -> Relu -> ... -> y, every 8th node an Add that also reads the output 8 back; stored reversed when asked."""
    nodes = []
    for i in range(1, n + 1):
        prev, out = "x" if i == 1 else f"t{i - 1}", "y" if i == n else f"t{i}"
        nodes.append(helper.make_node("Add", [prev, f"t{i - 8}"], [out], name=f"n{i}") if i % 8 == 0 and i > 8
                     else helper.make_node("Relu", [prev], [out], name=f"n{i}"))
    graph = helper.make_graph(nodes[::-1] if reverse else nodes, "chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])])
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return path


def test_a_graph_stored_in_reverse_costs_what_the_ordered_one_does(tmp_path):
    forward = onnx_ledger(_chain(200, False, tmp_path / "f.onnx"))
    backward = onnx_ledger(_chain(200, True, tmp_path / "b.onnx"))
    assert [(o.op, o.flops, o.bytes_read) for o in backward.ops] == [(o.op, o.flops, o.bytes_read) for o in forward.ops]


def test_12000_nodes_in_reverse_are_ordered_in_linear_time(tmp_path):
    """Issue 27: 12,000 reverse-ordered nodes took 54 s (a pass per node); ordering is now O(nodes + edges)
    (benchmarks/onnx_order.py: 1.4 to 2.6 µs a node from 1k to 100k nodes)."""
    import time

    from sizeup.ingest.onnx_order import topological_order

    model = onnx.load(str(_chain(12_000, True, tmp_path / "b.onnx")))
    start = time.perf_counter()
    ordered = topological_order(model.graph, {"x"}, tmp_path / "b.onnx")
    assert time.perf_counter() - start < 2.0
    assert [n.name for n in ordered] == [f"n{i}" for i in range(1, 12_001)]


@pytest.mark.parametrize("nodes, message", [
    ([helper.make_node("Relu", ["x"], ["t"], name="a"), helper.make_node("Relu", ["x"], ["t"], name="b")],
     "tensor 't' is written by two nodes ('a' and 'b')"),
    ([helper.make_node("Relu", ["u"], ["t"], name="a"), helper.make_node("Relu", ["t"], ["u"], name="b")],
     "node 'a' is on a cycle of the graph"),
    ([helper.make_node("Relu", ["t"], ["y"], name="a"), helper.make_node("Relu", ["nowhere"], ["t"], name="b")],
     "node 'b' reads 'nowhere', which no node, input or initializer makes"),
])
def test_graphs_no_order_can_run_are_refused_in_one_line(tmp_path, nodes, message):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    path = tmp_path / "g.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    with pytest.raises(IngestError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        onnx_ledger(path)
    assert "\n" not in str(info.value)
