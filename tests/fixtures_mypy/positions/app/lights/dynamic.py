import importlib
import os

PLUGIN = importlib.import_module(os.environ.get("APP_PLUGIN", "json"))  # IPL006: 9 dynamic-import
