"""Renderers of typed results; they format, never recompute."""
