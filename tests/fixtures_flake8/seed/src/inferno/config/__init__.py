"""Pretends to initialise CUDA when imported."""

CONFIG = {"world_size": 1}
