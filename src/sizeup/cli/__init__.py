"""The `sizeup` command line."""
