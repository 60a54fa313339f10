"""Data files: ``policy.schema.json``, the JSON Schema (draft 2020-12) of ``policy.toml`` for TOML
editors (docs/policy.md). importpolicy itself validates policies in :mod:`flake8_importpolicy.config.load`."""
