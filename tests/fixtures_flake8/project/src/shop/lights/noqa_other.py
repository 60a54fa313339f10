import shop.gpu  # noqa: E501  # IPL001: 0 shop.gpu
