"""The API server: imports the light ops before it forks the engine worker."""

from inferno.logger import get_logger
from inferno.models.common.ops import rms_norm

log = get_logger(__name__)
NORM = rms_norm
