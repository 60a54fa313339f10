"""Data files: built-in policy presets (``*.toml``, each a ``[heavy]`` or ``[heavy-calls]`` table).

A policy names one in ``extends = ["torch-cuda"]``; :mod:`flake8_importpolicy.config.presets` finds
them and :mod:`flake8_importpolicy.config.load` merges them (docs/presets.md). ``torch-cuda.toml`` and
``torch-cuda-driver.toml`` are generated from torch's source by ``tools/derive_torch_cuda.py``;
``heavy-ml.toml`` is written by hand."""
