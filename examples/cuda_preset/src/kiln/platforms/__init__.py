"""The platform the server runs on, chosen once (like vllm.platforms.current_platform)."""

import os


class CudaPlatform:
    def is_rocm(self) -> bool:
        return False


class RocmPlatform:
    def is_rocm(self) -> bool:
        return True


current_platform = RocmPlatform() if os.environ.get("KILN_ROCM") else CudaPlatform()
