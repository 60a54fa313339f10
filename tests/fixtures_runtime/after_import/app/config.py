import torch

DEVICE = "cuda"
torch.cuda.init()  # probes the GPU at import time
