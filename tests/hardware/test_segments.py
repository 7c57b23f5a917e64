"""The market classes `sizeup estimate --devices CLASS` groups the catalog by (hardware/segments.py)."""

from sizeup.hardware.catalog import load_catalog
from sizeup.hardware.segments import COMMON_DEVICES, SEGMENTS, segment_of


def test_every_device_has_one_class_and_the_known_ones_are_right():
    cat = load_catalog()
    classes = {d.id: segment_of(d) for d in cat.devices.values()}
    assert set(classes.values()) <= set(SEGMENTS)
    expected = {"rtx-4090": "consumer", "rtx-4090-laptop": "consumer", "rx-7900-xtx": "consumer", "arc-b580": "consumer",
                "rtx-6000-ada": "workstation", "rtx-a6000": "workstation", "radeon-pro-w7900": "workstation",
                "apple-m3-max": "apple", "h100-sxm-80gb": "datacenter", "l4": "datacenter", "tpu-v5e": "datacenter",
                "jetson-orin-nano-8gb": "edge", "raspberry-pi-5-8gb": "edge", "epyc-9654": "cpu",
                "core-i9-13900k": "cpu", "ryzen-ai-max-395": "workstation", "ryzen-ai-max-395-cpu": "cpu",
                "jetson-agx-thor": "edge", "apple-m5": "apple", "mi355x": "datacenter", "gb200": "datacenter",
                "gtx-1080-ti": "consumer", "tesla-p40": "datacenter", "gaudi3": "accelerator",
                "ascend-910b3": "accelerator", "tenstorrent-n300": "accelerator", "inferentia2": "accelerator"}
    assert {k: classes[k] for k in expected} == expected
    assert all(classes[d] == "cpu" for d in classes if d.startswith("apple-") and d.endswith("-cpu"))
    assert set(COMMON_DEVICES) <= set(classes)
