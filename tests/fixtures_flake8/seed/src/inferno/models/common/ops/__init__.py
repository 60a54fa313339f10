"""Light ops: imported by the API server before the engine worker forks."""

from __future__ import annotations

from .rms_norm import rms_norm

__all__ = ["rms_norm"]
