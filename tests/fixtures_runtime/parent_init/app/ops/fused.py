from app.heavy import init


def fused_op():
    return init
