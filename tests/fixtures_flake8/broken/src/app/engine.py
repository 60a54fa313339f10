import app.gpu  # IPL002: 0 app.gpu
