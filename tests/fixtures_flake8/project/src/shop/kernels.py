"""On the reported chains."""

import shop.gpu  # IPL002

NAME = shop.gpu.DEVICE
