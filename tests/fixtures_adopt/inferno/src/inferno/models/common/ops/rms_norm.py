from inferno.logger import get_logger

log = get_logger(__name__)


def rms_norm(xs: list[float]) -> list[float]:
    norm = (sum(x * x for x in xs) / len(xs)) ** 0.5
    return [x / norm for x in xs]
