import shop.gpu
