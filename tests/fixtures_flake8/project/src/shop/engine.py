"""On both light modules' chains."""

from shop import kernels  # IPL002: 0 shop.gpu
from shop import helpers


def run() -> str:
    return kernels.NAME + helpers.NAME
