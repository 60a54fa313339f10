import app.gpu  # IPL002
