"""Not on a reported chain either."""

from shop.gpu import DEVICE

NAME = DEVICE
