"""Pretend to initialise CUDA when imported (the heavy, fork-unsafe side effect)."""

print("inferno.config: initialising CUDA ...")
CONFIG = {"world_size": 1, "device": "cuda:0"}
