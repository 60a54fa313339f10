"""On the reported chains."""

import shop.gpu  # IPL002: 0 shop.gpu

NAME = shop.gpu.DEVICE
