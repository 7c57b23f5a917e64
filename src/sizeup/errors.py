"""The error hierarchy: every bad input the user can give raises a `SizeupError` subclass.

The library never prints or exits; the CLI turns a `SizeupError` into one line on stderr and exit code 1.
"""

from __future__ import annotations

__all__ = [
    "SizeupError",
    "CatalogError",
    "ConfigError",
    "IngestError",
    "MeasureError",
    "ResolveError",
]


class SizeupError(Exception):
    """Base class of all errors a user can cause; the message is one line that names the value."""

    exit_code: int = 1


class ConfigError(SizeupError):
    """A command-line value, scenario or option that is malformed or out of range."""


class CatalogError(SizeupError):
    """A hardware or offer data file that does not follow the schema."""


class ResolveError(SizeupError):
    """A name (device, model, offer) that matches nothing; the message lists the closest names."""


class IngestError(SizeupError):
    """A model that cannot be read or traced: missing file, no such factory, a rejected input."""


class MeasureError(SizeupError):
    """A measurement that cannot run: unknown local device, bad sweep values."""
