"""Kernels shared by every model; imported by the API server before the engine forks."""

from kiln.ops.layernorm import rms_norm

__all__ = ["rms_norm"]
