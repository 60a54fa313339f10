import shop.gpu  # noqa
