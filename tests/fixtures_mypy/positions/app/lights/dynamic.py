import importlib
import os

PLUGIN = importlib.import_module(os.environ.get(os.sep[:0] + "APP_PLUGIN", "json"))  # IPL006: 9 dynamic-import
