"""A calibration holds the per-kernel time an estimate prices on the device: on a system-on-chip its vendor's
(soc.yaml `by_vendor`), through the one function the estimate uses (price/efficiency.py `table_efficiency`)."""

from sizeup.hardware.catalog import load_catalog
from sizeup.measure.calibrate import uncalibrated_efficiency
from sizeup.measure.calibrate_runs import _held_overhead
from sizeup.price.efficiency import table_efficiency


def test_jetson_fit_holds_the_cuda_launch_time_not_metal():
    orin = load_catalog().device("jetson-agx-orin-64gb")
    # soc.yaml by_vendor.nvidia takes gpu.yaml's overhead_s: 10 us typical (PyTorch eager dispatch 5-7 us plus
    # 2.6-6.4 us a launch; pytorch/pytorch#41383, ahrefs/ocannl#488), not Metal/MPS's 20 us (pytorch#148219).
    assert _held_overhead(orin, None) == table_efficiency(orin).overhead_s.typical == 1.0e-05


def test_apple_fit_keeps_the_metal_figure():
    mac = load_catalog().device("apple-m4-max")
    # soc.yaml overhead_s typical 20 us: MPSGraph-backed ops ~20 us a dispatch (pytorch/pytorch#148219).
    assert _held_overhead(mac, None) == 2.0e-05


def test_peaks_only_efficiency_takes_the_same_per_kernel_time():
    for name in ("jetson-agx-orin-64gb", "dgx-spark", "apple-m4-max", "h100"):
        device = load_catalog().device(name)
        assert uncalibrated_efficiency(device).overhead_s == table_efficiency(device).overhead_s
