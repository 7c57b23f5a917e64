"""cuDNN's NCHW->NHWC transform before a tensor-core convolution (price/conv_algos.py): which convs pay it,
how many bytes, and that its time adds to the conv's."""

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ledger import Ledger, OpKind, OpRecord
from sizeup.engines.runtimes import get_runtime
from sizeup.price.roofline import price

CATALOG = load_catalog(include_user=False)


def _conv(dtype):
    # big enough to be bound by its own work, not by the host time per kernel
    return Ledger(ops=[OpRecord(op="aten.convolution", kind=OpKind.CONV, scope="conv1", flops=10**12,
                                matmul_flops=10**12, bytes_read=3 * 10**8, bytes_written=10**8, dtype=dtype)])


def test_an_nchw_tensor_core_conv_moves_its_input_twice_more_in_a_kernel_of_its_own():
    d = CATALOG.device("rtx-3090")
    nchw = price(_conv("fp16"), d, runtime=get_runtime("pytorch-eager-amp"))
    nhwc = price(_conv("fp16"), d, runtime=get_runtime("pytorch-eager-amp-channels-last"))
    transform_s = 2 * 3 * 10**8 / (d.memory_bandwidth_bytes_per_s * nchw.efficiency.memory.typical)
    assert nchw.total_s.typical == pytest.approx(nhwc.total_s.typical + transform_s)
    assert nchw.arrays.launches[0] == nhwc.arrays.launches[0] + 1
    assert any("NCHW" in n for n in nchw.notes)


def test_simt_convs_and_fused_engines_pay_no_transform():
    """FP32 on a V100 runs FFMA kernels that read NCHW natively; TensorRT picks its own layout."""
    v100 = CATALOG.device("v100-sxm2-16gb")
    eager = price(_conv("fp32"), v100, runtime=get_runtime("pytorch-eager"))
    assert not eager.arrays.serial_bytes.any()
    trt = price(_conv("fp16"), v100, runtime=get_runtime("tensorrt"))
    assert not trt.arrays.serial_bytes.any()


def test_the_modelled_layout_cost_is_within_the_measured_nchw_nhwc_gap_order():
    """CHECK, not a fit: timm benchmark.py ResNet-50 at batch 1024 (huggingface/pytorch-image-models results,
    pt240 files), NCHW 3219.06 / NHWC 3729.86 img/s on an RTX 3090: 43.6 ms per 1024 images. The bytes rule,
    from a ResNet-50 ledger's conv input bytes (21.9 GB per 1024 images in fp16), gives 55 ms: within 1.5x."""
    d = CATALOG.device("rtx-3090")
    conv_input_bytes = 21.88e9  # sum of bytes_read of the 53 convolutions of the traced ResNet-50 at batch 1024
    modelled = 2 * conv_input_bytes / (d.memory_bandwidth_bytes_per_s * 0.85)
    measured = 1024 / 3219.06 - 1024 / 3729.86
    assert measured < modelled < 1.5 * measured


def _conv3x3(dtype, stride=(1, 1), flops=10**12, nbytes=3 * 10**8):
    return Ledger(ops=[OpRecord(op="aten.convolution", kind=OpKind.CONV, scope="conv1", flops=flops,
                                matmul_flops=flops, bytes_read=nbytes, bytes_written=nbytes // 3, dtype=dtype,
                                conv_kernel=(3, 3), conv_stride=stride)])


def test_a_simt_fp32_3x3_stride_1_conv_takes_the_fused_winograd_form():
    """Lavin & Gray 2015: F(2x2,3x3) needs 16 multiplies per 4 outputs instead of 36 (2.25x fewer). On a
    V100 (no TF32) this conv is compute-bound, the fused form adds no traffic, and its tensors are large enough
    that the non-fused form's transform traffic would cost more than its extra multiply saving."""
    from sizeup.price.conv_algos import FUSED_REDUCTION

    v100 = CATALOG.device("v100-sxm2-16gb")
    wino = price(_conv3x3("fp32", nbytes=3 * 10**9), v100, runtime=get_runtime("pytorch-eager"))
    strided = price(_conv3x3("fp32", stride=(2, 2), nbytes=3 * 10**9), v100, runtime=get_runtime("pytorch-eager"))
    assert wino.arrays.tensor_flops[0] == pytest.approx(10**12 / FUSED_REDUCTION)
    assert strided.arrays.tensor_flops[0] == 10**12  # stride 2: no Winograd
    assert wino.total_s.typical < strided.total_s.typical / 2
    assert any("Winograd" in n for n in wino.notes)


def test_the_nonfused_form_wins_where_its_transform_traffic_is_cheap():
    """F(4x4,3x3) (4x fewer multiplies) pays 2.25x the tensors written and read by transform kernels: it wins
    for a conv whose bytes are small next to its FLOPs, and its traffic adds as serial bytes."""
    from sizeup.price.conv_algos import NONFUSED_EXPANSION, NONFUSED_REDUCTION

    v100 = CATALOG.device("v100-sxm2-16gb")
    roof = price(_conv3x3("fp32", nbytes=3 * 10**6), v100, runtime=get_runtime("pytorch-eager"))
    assert roof.arrays.tensor_flops[0] == pytest.approx(10**12 / NONFUSED_REDUCTION)
    assert roof.arrays.serial_bytes[0] == pytest.approx(2 * NONFUSED_EXPANSION * (3 * 10**6 + 10**6))


def test_tensor_core_convs_keep_their_direct_flops():
    """fp16 on a V100 and fp32 on an A100 (TF32 allowed for cuDNN convs) run on tensor cores: no Winograd."""
    for device, dtype in (("v100-sxm2-16gb", "fp16"), ("a100-sxm-80gb", "fp32")):
        roof = price(_conv3x3(dtype), CATALOG.device(device), runtime=get_runtime("pytorch-eager"))
        assert roof.arrays.tensor_flops[0] == 10**12
