def init():
    return "cuda"
