"""Process groups."""

from inferno.config import CONFIG


def get_world_size() -> int:
    return int(CONFIG["world_size"])
