"""The mypy plugin (a thin adapter over :mod:`flake8_importpolicy`); see its own issue."""
