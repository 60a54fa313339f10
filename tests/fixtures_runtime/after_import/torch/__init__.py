"""A fake torch: torch.cuda.is_initialized() flips when something calls torch.cuda.init()."""

from torch import cuda
