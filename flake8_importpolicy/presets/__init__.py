"""Data files: built-in policy presets (``*.toml``, each a ``[heavy]`` or ``[heavy-calls]`` table).

``torch-cuda.toml`` and ``torch-cuda-driver.toml`` are generated from torch's source by
``benchmarks/derive_torch_cuda.py``; ``heavy-ml.toml`` is written by hand. importpolicy does not read
them yet (``extends`` is not implemented)."""
