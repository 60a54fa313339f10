from shop.gpu import (  # noqa: IPL001
    DEVICE,
)

__all__ = ["DEVICE"]
