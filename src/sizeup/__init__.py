"""sizeup: how much compute a model needs for a job, and which hardware is just enough.

Nothing heavy loads at import time; torch is imported only when a torch model is traced.
"""

from sizeup import dataclass_code

dataclass_code.install()  # before any sizeup class is defined: their methods' code is kept between processes

from sizeup.errors import (  # noqa: E402
    CatalogError, ConfigError, IngestError, MeasureError, ResolveError, SizeupError)

__version__ = "0.1.0"

__all__ = [
    "CatalogError",
    "ConfigError",
    "IngestError",
    "MeasureError",
    "ResolveError",
    "SizeupError",
    "__version__",
]
