import shop.gpu  # noqa: IPL002  # IPL001
