from typing import TYPE_CHECKING

from inferno.config import CONFIG

if TYPE_CHECKING:
    from inferno.models import registry  # type checking only: never runs


def get_world_size() -> int:
    return CONFIG["world_size"]
