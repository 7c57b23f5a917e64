"""What the measurement commands share: integer lists from flags, and the cost report of a measured target."""

from __future__ import annotations

__all__ = ["positive_ints", "report_at"]


def positive_ints(text: str, what: str) -> tuple[int, ...]:
    from sizeup.errors import MeasureError

    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise MeasureError(f"{what} {text!r}: expected integers like 1,2,4") from None
    if not values or min(values) < 1:
        raise MeasureError(f"{what} {text!r}: every value must be a positive integer")
    return values


def report_at(target: str, config: dict, batch: int, train: bool = False):
    """The cost report of a measured target at one batch size: the torch trace with the inputs'
    leading dimension set to the batch, or the ONNX graph with its batch dimension bound."""
    from sizeup.api import ParsedInput, count_flops, count_onnx

    if config.get("onnx"):
        dims = dict(config.get("dims") or {})
        if config.get("batch_dim"):
            dims[config["batch_dim"]] = batch
        return count_onnx(target, dims=dims)
    inputs = [ParsedInput(shape=(batch, *i["shape"][1:]), dtype=i["dtype"], name=i["name"]) for i in config["inputs"]]
    return count_flops(target, inputs, dtype=config.get("dtype", "fp32"), mode="train" if train else "inference")
