import app.heavy  # noqa: IPL001

DEVICE = app.heavy.DEVICE
