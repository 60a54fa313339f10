"""Distributed state: needs the config, whose import initialises CUDA."""

from inferno.config import CONFIG


def get_world_size() -> int:
    return CONFIG["world_size"]


def apply_norm(xs: list[float]) -> list[float]:
    from inferno.models.common.ops.rms_norm import rms_norm  # deferred: runs only when called

    return rms_norm(xs)
