"""The seed bug: a convenience re-export in the package __init__."""

from app.ops.fused import fused_op

__all__ = ["fused_op"]
