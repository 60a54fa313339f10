"""RMS norm, with a kernel chosen by the GPU's compute capability."""

import torch

from kiln.platforms import current_platform

if current_platform.is_rocm():
    # ROCm: the architecture comes from the HIP runtime (never taken on an NVIDIA deployment).
    _ARCH = torch.cuda.get_device_properties(0).gcnArchName
else:
    _CAPABILITY = torch.cuda.get_device_capability()


def rms_norm(x, weight, eps=1e-6):
    variance = x.pow(2).mean(-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight
