import shop.gpu  # noqa: E501  # IPL001
