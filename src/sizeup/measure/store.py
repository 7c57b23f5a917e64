"""The run store moved to `sizeup.store` (one schema, SQLite and PostgreSQL backends); this name stays for code
written against it: `Store` is the SQLite store, `open_store` picks the backend from a path or URL."""

from sizeup.store import (POINT_STATUSES, RUN_KINDS, RUN_STATUSES, SCHEMA_VERSION, PointRecord, RunRecord, Store,
                          default_path, open_store, summarize_samples)

__all__ = ["SCHEMA_VERSION", "RUN_KINDS", "RUN_STATUSES", "POINT_STATUSES", "RunRecord", "PointRecord", "Store",
           "default_path", "open_store", "summarize_samples"]
