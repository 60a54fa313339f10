"""Distributed state: needs the config, whose import initialises CUDA."""

from inferno.config import CONFIG
from inferno.logger import get_logger

log = get_logger(__name__)


def get_world_size() -> int:
    return int(CONFIG["world_size"])
