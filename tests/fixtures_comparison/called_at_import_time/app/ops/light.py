from app.plugins import register_all

register_all()  # ... but run at import time
