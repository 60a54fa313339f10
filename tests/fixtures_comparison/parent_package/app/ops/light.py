"""Imports nothing heavy itself; its parent package does."""


def norm(x: float) -> float:
    return x
