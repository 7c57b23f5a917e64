"""Which market a catalog device belongs to: the classes `sizeup estimate --devices` groups by.

The catalog states a device's kind (gpu, soc, cpu, npu, tpu) but not who buys it; the class follows
from the product line named in the device's id and vendor, by the rules below, in order. A device
added to the catalog falls into a class by the same rules (a GPU of no named consumer or workstation
line is a data-centre part).
"""

from __future__ import annotations

from sizeup.hardware.schema import DeviceSpec

__all__ = ["SEGMENTS", "COMMON_DEVICES", "segment_of"]

SEGMENTS = ("consumer", "workstation", "apple", "datacenter", "accelerator", "edge", "cpu")
"""Every class; `all` on the command line is their union."""

COMMON_DEVICES = ("rtx-3060-12gb", "rtx-4060-ti-16gb", "rtx-4090", "rtx-5090", "apple-m3-max", "l4",
                  "a100-sxm-80gb", "h100-sxm-80gb")
"""The cards `sizeup estimate MODEL` compares when no device is named: the most common consumer cards
at 12, 16, 24 and 32 GB, one Mac, and the three data-centre GPUs most rented for inference."""

_EDGE = ("jetson-", "raspberry-pi-")
_CONSUMER = ("gtx-", "rtx-20", "rtx-30", "rtx-40", "rtx-50", "titan-", "rx-", "arc-")
_WORKSTATION = ("rtx-a", "rtx-pro-", "radeon-pro-", "dgx-spark", "arc-pro-", "ryzen-ai-max-")


def segment_of(device: DeviceSpec) -> str:
    """The class of `device`: edge (Jetson, Raspberry Pi), cpu (every CPU, a Mac's CPU cluster included), apple
    (M-series SoCs: their GPU), consumer (GeForce GTX 10 and RTX 20-50
    and TITAN, Radeon RX, Arc), workstation (RTX A/Ada/PRO, Radeon PRO, Arc Pro, DGX Spark, Ryzen AI Max
    unified-memory desktops), accelerator (every NPU: Gaudi, Inferentia, Trainium, Ascend, Tenstorrent; the
    catalog's kind npu, its own class so that GPU rows never narrow the range of a part they do not measure),
    else datacenter (a TPU included)."""
    did = device.id
    if did.startswith(_EDGE):
        return "edge"
    if device.kind == "cpu":
        return "cpu"
    if device.vendor == "apple" or did.startswith("apple-"):
        return "apple"
    if did.endswith("-ada") or did.startswith(_WORKSTATION):
        return "workstation"
    if did.startswith(_CONSUMER):
        return "consumer"
    if device.kind == "npu":
        return "accelerator"
    return "datacenter"
