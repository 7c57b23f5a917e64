"""Shapes an ONNX file declares that no graph computes: a negative or (for an input) zero size, a tensor past the
bound on elements, and `--dim` sizes that are not plain digits — each one line, never a division by zero or an
estimate of 1e26 TiB."""

import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402

from sizeup.cli.main import main  # noqa: E402
from sizeup.errors import IngestError  # noqa: E402
from sizeup.ingest.onnx_graph import onnx_ledger  # noqa: E402


def relu_chain(path, shape, n=2):
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"n{i}") for i in range(n)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, None)])
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return path


@pytest.mark.parametrize("shape, says", [([-1, 64], "tensor 't0' has size -1 on axis 0: expected a size of at least 1"),
                                         ([0, 64], "tensor 't0' has size 0 on axis 0: expected a size of at least 1")])
def test_an_input_size_below_one_is_refused(tmp_path, shape, says):
    with pytest.raises(IngestError, match=says):
        onnx_ledger(relu_chain(tmp_path / "m.onnx", shape))


def test_a_tensor_past_the_bound_is_refused(tmp_path):
    with pytest.raises(IngestError, match=r"tensor 't0' of shape \[4611686018427387904, 4611686018427387904\] has "
                                          r"more than 1e14 elements"):
        onnx_ledger(relu_chain(tmp_path / "m.onnx", [2**62, 2**62]))
    with pytest.raises(IngestError, match="more than 1e14 elements"):
        onnx_ledger(relu_chain(tmp_path / "b.onnx", ["batch", 2**40]), dims={"batch": 10**6})


@pytest.mark.parametrize("dim", ["batch=" + "9" * 5000, "batch=²", "batch=١٢", "batch=0", "batch=" + "9" * 16])
def test_a_dim_size_that_is_not_plain_digits_is_one_line(tmp_path, capsys, dim):
    path = relu_chain(tmp_path / "m.onnx", ["batch", 64])
    assert main(["flops", str(path), "--dim", dim]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sizeup: error: --dim ") and err.count("\n") == 1 and "bug" not in err


def test_a_zero_size_input_through_estimate_is_one_line(tmp_path, capsys):
    assert main(["estimate", str(relu_chain(tmp_path / "m.onnx", [0, 64])), "--device", "rtx-4090"]) == 1
    assert "has size 0 on axis 0" in capsys.readouterr().err
