"""A tiny inference server (fixture for the mypy plugin)."""
