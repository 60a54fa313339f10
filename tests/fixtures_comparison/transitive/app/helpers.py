import app.heavy


def helper() -> int:
    return 1
