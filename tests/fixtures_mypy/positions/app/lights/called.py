from app.setup import setup

DEVICE = int(setup())  # IPL001: 13 app.heavy
