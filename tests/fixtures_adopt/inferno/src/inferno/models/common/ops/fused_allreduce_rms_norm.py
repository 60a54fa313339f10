from inferno.distributed.parallel_state import get_world_size


def fused_allreduce_rms_norm(xs: list[float]) -> list[float]:
    return [x * get_world_size() for x in xs]
