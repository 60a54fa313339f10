def rms_norm(xs: list[float]) -> list[float]:
    norm: float = (sum(x * x for x in xs) / len(xs)) ** 0.5
    return [x / norm for x in xs]
