"""Pricing: roofline time per op on a device, memory models, communication."""
