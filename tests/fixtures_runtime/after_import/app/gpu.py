from app import config

DEVICE = config.DEVICE
