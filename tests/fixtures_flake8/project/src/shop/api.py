"""Light: the web API."""

from shop.engine import (  # IPL001: 0 shop.gpu
    run,
)

__all__ = ["run"]
