"""A tiny inference server (example for flake8-importpolicy)."""
