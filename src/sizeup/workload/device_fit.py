"""Which devices run a model, at which weight format, how fast, and at what price per million tokens:
the table the seeds draw by hand, one row per device, each row a full inference estimate.

Per device the engine is the one its class runs (data/engines/defaults.yaml, engines/defaults.py: a local engine on
consumer cards, Macs, edge boards and CPUs; a serving engine on workstation and data-centre GPUs) unless one is
given, and the format is the highest-precision one of that engine's formats (its FORMATS) that fits the batch and context. The price
is the cheapest on-demand cloud offer carrying the device, per GPU, over the decode tokens it produces.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sizeup.engines.base import engine_class, parse_engine
from sizeup.engines.defaults import default_for_segment, default_for_weights
from sizeup.errors import SizeupError
from sizeup.hardware.catalog import Catalog
from sizeup.hardware.offer_price import replica_price
from sizeup.hardware.schema import DeviceSpec, Offer
from sizeup.hardware.segments import segment_of
from sizeup.units import format_bytes

__all__ = ["DeviceFit", "device_fit", "cheapest_offer", "engine_formats", "formats_to_try", "FitVerdict", "fit_verdict",
           "memory_verdict", "training_fit_verdict", "FITS", "MAY_NOT_FIT", "DOES_NOT_FIT"]

FITS, MAY_NOT_FIT, DOES_NOT_FIT = "fits", "may not fit", "does not fit"


@dataclass(frozen=True, slots=True)
class FitVerdict:
    """Whether an inference estimate fits, three ways: `fits` (the memory range's high end fits the usable
    memory), `may not fit` (the typical figure fits, the high end does not) or `does not fit` (the typical
    figure does not)."""

    verdict: str
    why: str = ""

    @property
    def comfortable(self) -> bool:
        return self.verdict == FITS


def memory_verdict(fits: bool, high: float | None, usable: float) -> FitVerdict:
    """The three-way rule every estimate shares: `does not fit` where the typical total does not (`fits` False),
    `may not fit` where it does but the memory range's `high` end exceeds the `usable` memory, else `fits`."""
    if not fits:
        return FitVerdict(DOES_NOT_FIT)
    if high is not None and high > usable:
        return FitVerdict(MAY_NOT_FIT, f"the high end of the memory range, {format_bytes(high)}, exceeds the "
                                       f"{format_bytes(usable)} usable per GPU")
    return FitVerdict(FITS)


def fit_verdict(estimate) -> FitVerdict:
    """The three-way verdict of `estimate` (an inference estimate): its memory total's calibrated range
    (`ranges.memory_total_bytes`, workload/inference_ranges.py) against the device's typical usable memory, the
    figure `memory.fits` compares the typical total with. Without a range the typical figure decides alone."""
    m = estimate.memory
    ranges = getattr(estimate, "ranges", None)
    high = None if ranges is None else ranges.memory_total_bytes.high
    return memory_verdict(m.fits, high, m.usable_bytes.typical)


def training_fit_verdict(estimate) -> FitVerdict:
    """The same rule for a training estimate (workload/training/estimate.py): micro-batch 1 must fit at the typical
    total, and the calibrated range of the total per GPU (`memory.total_range`) decides between fits and may not fit."""
    m = estimate.memory
    return memory_verdict(m.fits and estimate.max_micro_batch >= 1, m.total_range.high, m.usable_bytes.typical)


def engine_formats(engine: str) -> tuple[str, ...]:
    """The formats people run with `engine` ('NAME', 'NAME@RELEASE'), most precise first (the engine file's FORMATS)."""
    return engine_class(parse_engine(engine).name).FORMATS


def formats_to_try(engine: str, device: DeviceSpec, formats: Iterable[str] | None = None) -> tuple[str, ...]:
    """`formats` (default: the engine's), most precise first, without fp8 where the engine's fp8 needs fp8 tensor
    units `device` lacks (the engine's own ladder also without a NATIVE_ONLY format whose units it lacks): what a
    device table tries in order, and a one-device estimate with no format named."""
    cls = engine_class(parse_engine(engine).name)
    ladder = tuple(formats) if formats else cls.FORMATS
    if cls.NATIVE_FP8_ONLY and "fp8" not in device.peak_flops_per_s:
        ladder = tuple(f for f in ladder if f != "fp8")
    if cls.NATIVE_ONLY and not formats:  # formats run only on their own tensor units, off a device without them
        from sizeup.formats import get_format

        ladder = tuple(f for f in ladder if f not in cls.NATIVE_ONLY
                       or get_format(f).compute_dtype in device.peak_flops_per_s)
    return ladder


@dataclass(frozen=True, slots=True)
class DeviceFit:
    device: DeviceSpec
    segment: str
    engine: str
    estimate: Any | None
    """The inference estimate at the chosen format; None where no format fits or none could be priced."""
    tried: tuple[str, ...]
    reason: str = ""
    offer: Offer | None = None
    usd_per_gpu_hour: float | None = None
    engine_default: str = ""
    """Why the engine was taken when none was named (data/engines/defaults.yaml); empty when one was."""

    @property
    def fits(self) -> bool:
        return self.estimate is not None and self.estimate.memory.fits

    @property
    def fit(self) -> str:
        """fits / may not fit / does not fit (fit_verdict) of the chosen format's estimate."""
        return DOES_NOT_FIT if self.estimate is None else fit_verdict(self.estimate).verdict

    @property
    def format(self) -> str | None:
        return self.estimate.weights.id if self.fits else None

    @property
    def engine_version(self) -> str | None:
        """The engine release the row's estimate describes (None where no estimate was made)."""
        x = getattr(self.estimate, "execution", None)
        return None if x is None else x.version

    @property
    def tokens_per_s(self) -> float | None:
        """Decode tokens/s of the whole batch (typical), or None where unknown."""
        e = self.estimate
        if not self.fits or e.decode is None or not e.decode.compute_priced or e.decode.tokens_per_s is None:
            return None
        return e.decode.tokens_per_s.typical

    @property
    def usd_per_million_tokens(self) -> float | None:
        rate = self.tokens_per_s
        if rate is None or self.usd_per_gpu_hour is None or rate <= 0:
            return None
        return self.usd_per_gpu_hour * self.estimate.config.gpus / (rate * 3600) * 1e6

    def to_dict(self) -> dict[str, Any]:
        e = self.estimate if self.fits else None
        return {
            "device": self.device.id, "name": self.device.name, "segment": self.segment, "engine": self.engine,
            "engine_version": self.engine_version, "engine_default": self.engine_default or None,
            "fits": self.fits, "fit": self.fit, "format": self.format, "formats_tried": list(self.tried), "reason": self.reason,
            "memory_bytes": e.memory.total_bytes if e else None,
            "usable_bytes": e.memory.usable_bytes.typical if e else None,
            "ttft_s": e.prefill.latency_s.typical if e and e.prefill.compute_priced else None,
            "decode_tokens_per_s": self.tokens_per_s,
            "offer": self.offer.id if self.offer else None,
            "provider": self.offer.provider if self.offer else None,
            "region": self.offer.region if self.offer else None,
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "usd_per_million_tokens": self.usd_per_million_tokens,
        }


def cheapest_offer(catalog: Catalog, device: DeviceSpec) -> tuple[Offer | None, float | None]:
    """The cheapest on-demand offer carrying `device`, and its price per GPU-hour."""
    offer, price = replica_price(catalog.offers_for(device.id), 1, "on-demand")
    return offer, (price if offer is not None else None)


def device_fit(arch, device: DeviceSpec, catalog: Catalog, *, engine: str | None, estimate_at,
               formats: Iterable[str] | None = None) -> DeviceFit:
    """Try the engine's formats on `device`, most precise first; `estimate_at(device, engine, fmt)`
    returns the inference estimate (sizeup.api.estimate with the user's batch and lengths)."""
    segment = segment_of(device)
    why = ""
    if engine is None:  # as the one-device estimate: the class's other engine where its own cannot load the format
        named = tuple(formats) if formats else ()
        engine, why = default_for_weights(segment, named[0]) if len(named) == 1 else default_for_segment(segment)
    ladder = formats_to_try(engine, device, formats)
    tried, last, reason = [], None, ""
    for fmt in ladder:
        tried.append(fmt)
        try:
            result = estimate_at(device, engine, fmt)
        except SizeupError as exc:
            reason = str(exc)
            continue
        last = result
        if result.memory.fits:
            break
    offer, price = cheapest_offer(catalog, device)
    if last is not None and not last.memory.fits:
        reason = f"needs {last.memory.total_bytes / 2**30:.1f} GiB at {tried[-1]}, " \
                 f"{last.memory.usable_bytes.typical / 2**30:.1f} GiB usable"
    return DeviceFit(device=device, segment=segment, engine=engine, estimate=last, tried=tuple(tried),
                     reason=reason if last is None or not last.memory.fits else "", offer=offer,
                     usd_per_gpu_hour=price, engine_default=why)
