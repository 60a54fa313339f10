"""Pretend to initialise CUDA when imported (the heavy, fork-unsafe side effect)."""

print("inferno.config: initialising CUDA ...")
CONFIG: dict[str, int] = {"world_size": 1}
DEVICE = "cuda:0"
