import torch

DEVICE = "cpu"
