"""argparse converters shared by the commands, so that the same kind of value reads the same way
everywhere: every duration takes a unit (500ms, 2s, 1h), every size a byte unit (24GB, 512MiB),
every count of tokens a suffix (4k, 2M). A bad value is one line naming the flag (see
`sizeup.units.number_flag`)."""

from __future__ import annotations

from sizeup.units import MAX_BATCH, MAX_GPUS, MAX_SLA_S, MAX_TOKENS, number_flag

MAX_DURATION_S = 30 * 86_400.0
"""A sweep, load test or watch: thirty days at most."""

DURATION_S = number_flag(above=0, maximum=MAX_DURATION_S, unit="s")
"""A positive duration in seconds: '60', '500ms', '2min', '1h'."""

SLA_S = number_flag(above=0, maximum=MAX_SLA_S, unit="s")
"""A latency target in seconds: '0.5', '500ms'."""

SIZE_BYTES = number_flag(integer=True, minimum=1, maximum=2**60, unit="bytes")
"""A positive size in bytes: '2GiB', '24GB', '512MiB'."""

TOKENS = number_flag(integer=True, minimum=1, maximum=MAX_TOKENS, unit="count")
"""A positive token count: '512', '4k', '2M'."""

TOKENS_OR_ZERO = number_flag(integer=True, minimum=0, maximum=MAX_TOKENS, unit="count")

BATCH = number_flag(integer=True, minimum=1, maximum=MAX_BATCH)

GPUS = number_flag(integer=True, minimum=1, maximum=MAX_GPUS)

COUNT = number_flag(integer=True, minimum=1, maximum=10**9, unit="count")
"""A positive whole count (requests, repetitions): '1000', '10k'."""

PORT = number_flag(integer=True, minimum=0, maximum=65_535)
"""A TCP port; 0 lets the system choose."""


def exclusive(parser, first: str, second: str, why: str) -> None:
    """Declare that `first` and `second` (flags, or a positional's name) cannot be given together, `why`
    saying what each does: `sizeup.cli.main` refuses the pair in one line after parsing, naming both values.
    A flag counts as given when its value is not None, False or empty (so such flags default to None);
    `--flag=value` counts when the flag has that value (`--api=http`)."""
    pairs = parser.get_default("exclusive_flags") or ()
    parser.set_defaults(exclusive_flags=(*pairs, (first, second, why)))


def check_exclusive(args) -> None:
    """Refuse the first declared pair (`exclusive`) whose flags were both given."""
    for first, second, why in getattr(args, "exclusive_flags", None) or ():
        if _given(args, first) is not None and _given(args, second) is not None:
            from sizeup.errors import ConfigError

            raise ConfigError(f"{shown_flag(args, first)} and {shown_flag(args, second)} cannot be given together: "
                              f"{why}")


def _given(args, flag: str):
    flag, _, wanted = flag.partition("=")
    value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
    if wanted:
        return value if value == wanted else None
    return None if value is None or value is False or value == [] or value == () else value


def shown_flag(args, flag: str) -> str:
    """`--users 20`, `--prompts 'p.txt'`, `--train`: the flag as given (a long value cut)."""
    value = _given(args, flag)
    flag = flag.partition("=")[0]
    if value is True:
        return flag
    if isinstance(value, (int, float)):
        return f"{flag} {value:g}"
    text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    return f"{flag} {text if len(text) <= 40 else text[:30] + '…'!r}"
