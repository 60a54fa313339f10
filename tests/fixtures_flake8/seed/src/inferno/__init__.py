"""A tiny inference server."""
