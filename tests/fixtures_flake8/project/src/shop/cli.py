"""Light: the command line."""

import shop.engine  # IPL001: 0 shop.gpu

__all__ = ["shop"]
