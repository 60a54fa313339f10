from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import app.heavy


def device() -> int:
    import app.heavy

    return app.heavy.DEVICE
