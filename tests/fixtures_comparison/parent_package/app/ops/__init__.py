from app.ops.fused import fused_op  # a convenience re-export
