def setup() -> int:
    import app.heavy

    return app.heavy.DEVICE
