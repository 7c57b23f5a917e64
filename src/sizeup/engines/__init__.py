"""Execution models: what an engine at a release does on a device (engines/base.py), one file per engine.

`resolve("vllm@0.10", device)` returns the ExecutionModel an estimate prices with; `engine_names()` lists the
engines, `parse_engine(text)` reads `NAME[@RELEASE]`. Nothing here imports price/: the pricing layer asks the model.
"""

from sizeup.engines.base import Batching, EngineRef, ExecutionModel, engine_names, parse_engine, resolve

__all__ = ["Batching", "EngineRef", "ExecutionModel", "engine_names", "parse_engine", "resolve"]
