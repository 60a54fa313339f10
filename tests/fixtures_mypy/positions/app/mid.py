import app.heavy


def device() -> int:
    return app.heavy.DEVICE
