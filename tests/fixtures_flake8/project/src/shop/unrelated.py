"""Imports the heavy module, but no light module imports this one."""

import shop.gpu

__all__ = ["shop"]
