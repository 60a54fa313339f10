"""A tiny stand-in for the lazy_loader package: ``load()`` as lazy_loader 0.4 implements it.

The module is put in sys.modules, created with importlib.util.LazyLoader, and its code runs only
when an attribute is first used.
"""

import importlib.util
import sys


def load(fullname):
    module = sys.modules.get(fullname)
    if module is not None:
        return module
    spec = importlib.util.find_spec(fullname)
    if spec is None:
        raise ModuleNotFoundError(f"No module named '{fullname}'")
    loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[fullname] = module
    loader.exec_module(module)
    return module
