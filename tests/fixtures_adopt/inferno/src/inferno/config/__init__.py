"""The engine's configuration: importing it imports torch and initialises CUDA."""

import torch

from inferno.logger import get_logger

CONFIG = {"world_size": 1, "device": torch.device("cuda")}
get_logger(__name__).info("CUDA initialised")
