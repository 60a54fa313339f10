import shop.gpu  # noqa: IPL002  # IPL001: 0 shop.gpu
