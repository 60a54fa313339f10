"""Light ops: imported by the API server before the engine worker forks."""

from inferno.models.common.ops.rms_norm import rms_norm
