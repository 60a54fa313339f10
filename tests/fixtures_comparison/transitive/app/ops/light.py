from app.helpers import helper

VALUE = 1
