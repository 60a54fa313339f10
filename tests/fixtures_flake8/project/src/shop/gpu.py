"""Heavy: pretends to initialise CUDA."""

DEVICE = "cuda:0"
