try:
    from app.heavy import DEVICE  # IPL001: 4 app.heavy
except ImportError:
    DEVICE = -1
