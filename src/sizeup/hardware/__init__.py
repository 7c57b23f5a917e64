"""Hardware: the sourced catalog of devices and cloud offers, name resolution, local detection."""
