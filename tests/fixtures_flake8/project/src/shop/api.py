"""Light: the web API."""

from shop.engine import (  # IPL001
    run,
)

__all__ = ["run"]
