_initialized = False


def is_initialized():
    return _initialized


def init():
    global _initialized
    _initialized = True
