"""`sizeup ui`: a local web app over the CLI and `sizeup.api` (Starlette, Jinja2, vendored htmx).

Nothing here is imported by the core: only `sizeup ui` (cli/commands/ui.py) and tests load it. Every
figure on a page comes from the same code path as the CLI's `--json` (see bridge.py); the UI adds no
formulas of its own.
"""
