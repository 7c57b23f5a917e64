"""One module per command; each exposes `register(subparsers)` and sets `func` on its parser."""
