from app.config import DEVICE


def fused_op() -> str:
    return DEVICE
