"""Pretend to initialise CUDA when imported (the heavy, fork-unsafe side effect)."""

print("inferno.config: initialising CUDA ...")
WORLD_SIZE: int = 1
