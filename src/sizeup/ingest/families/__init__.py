"""Model families: one file per architecture family, each registering the `model_type`s it reads with
`@family(...)` from `registry.py`; `registry.parse_config` sends a config to its family."""
