"""sizeup: how much compute a model needs for a job, and which hardware is just enough.

Nothing heavy loads at import time; torch is imported only when a torch model is traced.
"""

from sizeup.errors import CatalogError, ConfigError, IngestError, MeasureError, ResolveError, SizeupError

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
