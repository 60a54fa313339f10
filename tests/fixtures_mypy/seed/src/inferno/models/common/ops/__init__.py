"""Light ops: imported by the API server before the engine worker forks."""

from __future__ import annotations

from inferno.models.common.ops.rms_norm import rms_norm

from .fused_allreduce_rms_norm import fused_allreduce_rms_norm

__all__ = ["rms_norm", "fused_allreduce_rms_norm"]
