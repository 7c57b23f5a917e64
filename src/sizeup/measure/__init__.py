"""Measurement on the local device: harness, sweeps, the run store, calibration."""
