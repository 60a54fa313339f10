"""Pretend to initialise CUDA when imported."""

DEVICE = 0
