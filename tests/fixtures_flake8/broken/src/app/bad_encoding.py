import app.gpu
NAME = 'été'
