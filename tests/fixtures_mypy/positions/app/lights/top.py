import app.mid  # IPL001: 0 app.heavy

DEVICE = app.mid.device()
