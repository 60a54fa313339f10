from inferno.config import WORLD_SIZE


def get_world_size() -> int:
    return WORLD_SIZE
