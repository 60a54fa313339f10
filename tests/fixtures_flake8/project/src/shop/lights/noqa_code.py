import shop.gpu  # noqa: IPL001
