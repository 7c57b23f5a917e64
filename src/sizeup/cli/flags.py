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
