"""Roofline pricing: bounds, precision fall-back, ranges, and the C2f depthwise lesson."""

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ledger import Ledger, OpKind, OpRecord
from sizeup.price.efficiency import Efficiency
from sizeup.price.roofline import LedgerArrays, price, tensor_precision
from sizeup.ranges import Range

CATALOG = load_catalog(include_user=False)
FLAT = Efficiency(tensor={k: Range(0.5, 0.5, 0.5) for k in ("matmul", "conv", "attention")},
                  vector=Range(0.5, 0.5, 0.5), memory=Range(0.8, 0.8, 0.8), overhead_s=Range(0, 0, 0))


def one_op(flops, nbytes, kind=OpKind.MATMUL, dtype="bf16", matmul=True):
    return Ledger(ops=[OpRecord(op="aten.mm", kind=kind, scope="x", flops=flops, matmul_flops=flops if matmul else 0,
                                bytes_read=nbytes, bytes_written=0, dtype=dtype)])


def test_compute_bound_matmul_time_is_flops_over_effective_peak():
    h100 = CATALOG.devices["h100-sxm-80gb"]
    result = price(one_op(10**15, 10**9), h100, FLAT)
    expected = 10**15 / (h100.peak_flops_per_s["bf16"] * 0.5)
    assert result.total_s.typical == pytest.approx(expected)
    assert result.bound()[0] == "compute"


def test_memory_bound_op_time_is_bytes_over_effective_bandwidth():
    h100 = CATALOG.devices["h100-sxm-80gb"]
    result = price(one_op(10**6, 10**10, kind=OpKind.ELEMENTWISE, matmul=False), h100, FLAT)
    assert result.total_s.typical == pytest.approx(10**10 / (h100.memory_bandwidth_bytes_per_s * 0.8))
    assert result.bound()[0] == "memory"


def test_overhead_bound_tiny_op():
    eff = FLAT.with_overrides(overhead_s=Range(1e-6, 5e-6, 1e-5))
    result = price(one_op(1000, 1000), CATALOG.devices["a10"], eff)
    assert result.bound()[0] == "overhead"
    assert result.total_s.low < result.total_s.typical < result.total_s.high


def test_fp8_on_v100_falls_back_with_a_note():
    v100 = CATALOG.devices["v100-sxm2-32gb"]
    unit, precision, _ = tensor_precision(v100, "matmul", "fp8")
    assert (unit, precision) == ("tensor", "fp16")
    result = price(one_op(10**12, 10**6, dtype="fp8"), v100, FLAT)
    assert any("fp8" in n and "fp16" in n for n in result.notes)


def test_fp32_matmul_uses_vector_peak_and_conv_uses_tf32():
    a100 = CATALOG.devices["a100-sxm-80gb"]
    assert tensor_precision(a100, "matmul", "fp32")[:2] == ("vector", "fp32")
    assert tensor_precision(a100, "conv", "fp32")[:2] == ("tensor", "tf32")


def test_ranges_are_ordered_with_default_efficiencies():
    for device in CATALOG.devices.values():
        result = price(one_op(10**12, 10**9), device)
        t = result.total_s
        assert t.low <= t.typical <= t.high


def test_aggregates_add_up_to_the_total():
    ledger = Ledger(ops=[
        OpRecord(op="aten.mm", kind=OpKind.MATMUL, scope="a.b", flops=10**12, matmul_flops=10**12, bytes_read=10**8,
                 dtype="bf16"),
        OpRecord(op="aten.add", kind=OpKind.ELEMENTWISE, scope="a.c", flops=10**6, bytes_read=10**9, dtype="bf16"),
    ])
    result = price(ledger, CATALOG.devices["l4"])
    by_scope = result.by("scope")
    assert by_scope[""]["time_s"].typical == pytest.approx(result.total_s.typical)
    assert by_scope["a"]["time_s"].typical == pytest.approx(by_scope["a.b"]["time_s"].typical
                                                           + by_scope["a.c"]["time_s"].typical)
    kinds = result.by("kind")
    assert sum(v["time_s"].typical for v in kinds.values()) == pytest.approx(result.total_s.typical)


def test_c2f_on_a10_depthwise_cuts_flops_far_more_than_time():
    """Batch 8 of 64×64 maps (an inspection service's batch in the reference write-up)."""
    pytest.importorskip("torch")
    from sizeup.examples import zoo
    from sizeup.ingest.torch_trace import InputSpec, trace_module

    a10 = CATALOG.devices["a10"]
    dense = trace_module(zoo.c2f, [InputSpec(shape=(8, 64, 64, 64))])
    dws = trace_module(zoo.c2f_depthwise, [InputSpec(shape=(8, 64, 64, 64))])
    dense_r, dws_r = price(dense, a10), price(dws, a10)
    # the 3×3 convs of the dense block are compute-bound; the depthwise convs are memory-bound
    bounds = dense_r.bound()
    assert {bounds[i] for i, o in enumerate(dense.ops) if o.scope in ("m.0.cv1.conv", "m.0.cv2.conv")} == {"compute"}
    dws_bounds = dws_r.bound()
    assert {dws_bounds[i] for i, o in enumerate(dws.ops) if o.scope.endswith("dw.conv")} == {"memory"}
    flops_ratio = dws.totals().flops / dense.totals().flops
    time_ratio = dws_r.total_s.typical / dense_r.total_s.typical
    assert flops_ratio == pytest.approx(0.40, abs=0.03)  # FLOPs fall by about 60%
    assert time_ratio > 0.6  # the predicted time falls by well under half of that
    assert time_ratio - flops_ratio > 0.2


def test_tiny_ops_on_a_gpu_are_launch_bound_but_sized_by_the_roofline():
    """At batch 1 the depthwise convs of C2f move ~2 MB: memory-bound on the roofline, but shorter
    than one eager launch on an A10, so the op costs the launch."""
    pytest.importorskip("torch")
    from sizeup.examples import zoo
    from sizeup.ingest.torch_trace import InputSpec, trace_module

    dws = trace_module(zoo.c2f_depthwise, [InputSpec(shape=(1, 64, 64, 64))])
    result = price(dws, CATALOG.devices["a10"])
    for i, o in enumerate(dws.ops):
        if o.scope.endswith("dw.conv"):
            assert result.memory[i] > result.compute[i]
            assert result.bound()[i] == "overhead"


def test_efficiency_file_accepts_kind_at_precision_and_rejects_others(tmp_path):
    import copy

    import yaml

    from sizeup.errors import CatalogError
    from sizeup.hardware.catalog import builtin_data_dir
    from sizeup.price.efficiency import parse_efficiency

    path = builtin_data_dir() / "efficiency" / "gpu.yaml"
    data = yaml.safe_load(path.read_text())
    assert "matmul@fp8" in parse_efficiency(data, path).tensor
    for bad in ("gemm@fp8", "matmul@"):
        broken = copy.deepcopy(data)
        broken["tensor"][bad] = broken["tensor"]["matmul"]
        with pytest.raises(CatalogError, match=f"unknown field 'tensor.{bad}'"):
            parse_efficiency(broken, path)
