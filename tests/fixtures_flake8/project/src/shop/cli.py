"""Light: the command line."""

import shop.engine  # IPL001

__all__ = ["shop"]
