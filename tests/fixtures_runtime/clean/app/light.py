from app import util

HELPER = util.helper  # not called at import time
