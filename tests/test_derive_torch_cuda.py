"""``tools/derive_torch_cuda.py``, which writes the ``torch-cuda`` presets, on a small torch of its own.

The real torch source re-derives the shipped presets in tests/test_presets_data.py (when a torch wheel
can be found); here a ``torch/`` directory of a few lines holds one case of each rule of the script's
docstring (R1-R8), so that each rule is pinned without a wheel: what becomes an entry of which preset,
what is left out and why, the reason's citation, the file it writes and ``--check``.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
from helpers import write_tree

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import derive_torch_cuda as script  # noqa: E402  (a script of tools/, not a package)

# get_device_index's parameter is "index", not "device": an unknown parameter that shares a
# module-level name resolves to that name (here the class torch.cuda.device), a limit of the script.
TORCH = {
    "torch/version.py": '__version__ = "9.1.0+cpu"\n',
    "torch/_utils.py": """\
        import torch


        def _get_device_index(device, optional=False):
            if device is None and optional:
                return torch.cuda.current_device()
            return 0
        """,
    "torch/cuda/__init__.py": """\
        import torch
        from torch._utils import _get_device_index
        from .memory import *  # noqa: F403

        _initialized = False
        _queued_calls = []
        __all__ = ["current_device", "device", "device_count", "device_index", "get_device_index",
                   "init", "is_initialized", "manual_seed", "memory_allocated", "set_device",
                   "Stream", "synchronize"]


        def _lazy_init():
            global _initialized
            torch._C._cuda_init()
            _initialized = True


        def _lazy_call(callable):
            if is_initialized():
                callable()
            else:
                _queued_calls.append(callable)


        def is_initialized():
            return _initialized


        def init():
            _lazy_init()


        def current_device():
            _lazy_init()
            return torch._C._cuda_getDevice()


        def set_device(index):
            torch._C._cuda_setDevice(index)


        def device_count():
            return torch._C._cuda_getDeviceCount()


        def manual_seed(seed):
            _lazy_call(lambda: current_device())


        def synchronize():
            if not is_initialized():
                return
            _lazy_init()


        def get_device_index(index=None):
            return _get_device_index(index, optional=True)


        def device_index(index):
            return _get_device_index(index)


        class device:
            def __init__(self, index):
                self.index = index

            def __enter__(self):
                set_device(self.index)

            def __exit__(self, *args):
                pass


        class Stream:
            def __new__(cls, device=None):
                if device is not None:
                    with torch.cuda.device(device):
                        pass
                return object.__new__(cls)
        """,
    "torch/cuda/memory.py": """\
        import torch

        __all__ = ["memory_allocated", "memory_stats"]


        def memory_stats():
            return {"device": torch.cuda.current_device()}


        def memory_allocated():
            if not torch.cuda.is_initialized():
                return 0
            return memory_stats()["device"]
        """,
    "torch/cuda/_private.py": """\
        import torch


        def helper():
            torch.cuda.init()
        """,
}


@pytest.fixture(scope="module")
def torch_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tree(tmp_path_factory.mktemp("site-packages"), TORCH) / "torch"


@pytest.fixture(scope="module")
def derived(torch_dir: Path) -> dict[str, dict[str, script.Entry]]:
    result = script.derive(script.DirSource(torch_dir))
    return {kind: {entry.key: entry for entry in entries} for kind, entries in result.items()}


def test_entries_of_each_preset(derived: dict[str, dict[str, script.Entry]]) -> None:
    """R1 and R2 (the seeds), R3 (calls followed through functions, module attributes and
    ``torch._utils``), R4 (a class's ``__init__``; ``with`` runs ``__enter__``), R8 (public names of
    ``torch.cuda`` and of its public submodules, private modules skipped)."""
    assert sorted(derived[script.LAZY]) == [
        "torch.cuda.Stream",  # R4: __new__ enters torch.cuda.device, whose __enter__ sets the device
        "torch.cuda.current_device",  # R1: _lazy_init()
        "torch.cuda.get_device_index",  # R3 through torch._utils, R7 with optional=True
        "torch.cuda.init",
        "torch.cuda.memory.memory_stats",  # R8: a public submodule's function
        "torch.cuda.memory_stats",  # R8: star-imported into torch.cuda
        "torch.cuda.set_device",  # R1: a torch._C function whose C++ wrapper runs _lazy_init()
    ]
    # R2: registers the fork handler (and not again what torch-cuda lists)
    assert sorted(derived[script.DRIVER]) == ["torch.cuda.device_count"]


def test_what_is_left_out(derived: dict[str, dict[str, script.Entry]]) -> None:
    """R5 (a lambda queued by ``_lazy_call`` does not run), R6 (initialised-only code), R7 (a
    parameter's default rules a branch out), R8 (private names and modules)."""
    entries = set(derived[script.LAZY]) | set(derived[script.DRIVER])
    for left_out in ("manual_seed", "synchronize", "memory_allocated", "memory.memory_allocated",
                     "device_index", "is_initialized", "device", "_lazy_init", "_private.helper"):
        assert f"torch.cuda.{left_out}" not in entries


def test_a_reason_cites_its_chain(derived: dict[str, dict[str, script.Entry]]) -> None:
    """R9: the first hop's file and line, the function called there and the last one before the seed;
    a ``torch._C`` seed says what its C++ wrapper does."""
    lazy, driver = derived[script.LAZY], derived[script.DRIVER]
    assert script.reason(lazy["torch.cuda.memory_stats"], script.LAZY, "9.1.0+cpu") == (
        "initialises CUDA in this process (torch 9.1.0: torch/cuda/memory.py:7 calls "
        "current_device(), which calls _lazy_init())"
    )
    assert script.reason(lazy["torch.cuda.set_device"], script.LAZY, "9.1.0") == (
        "initialises CUDA in this process (torch 9.1.0: torch/cuda/__init__.py:39 calls "
        "torch._C._cuda_setDevice(), whose C++ wrapper runs _lazy_init())"
    )
    assert script.reason(lazy["torch.cuda.Stream"], script.LAZY, "9.1.0") == (
        "constructing it initialises CUDA in this process (torch 9.1.0: torch/cuda/__init__.py:78 "
        "enters with device(...), which reaches torch._C._cuda_setDevice() via set_device(), whose "
        "C++ wrapper runs _lazy_init())"
    )
    assert script.reason(driver["torch.cuda.device_count"], script.DRIVER, "9.1.0") == (
        "registers torch's CUDA fork handler: a process forked afterwards cannot use CUDA (torch "
        "9.1.0: torch/cuda/__init__.py:43 calls torch._C._cuda_getDeviceCount(), which also "
        "initialises the CUDA driver (cudaGetDeviceCount runs cuInit))"
    )


def test_writes_the_presets_and_checks_them(
    torch_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The files it writes are ``[heavy-calls]`` tables under a header naming the command, the torch
    version and the source; ``--check`` compares everything but the header."""
    out = tmp_path / "presets"
    args = ["--torch-dir", str(torch_dir), "--output-dir", str(out)]
    assert script.main(args) == 0
    text = (out / "torch-cuda.toml").read_text()
    assert text.splitlines()[1:5] == [
        "# Generated by: python tools/derive_torch_cuda.py --version 9.1.0",
        f"# From torch 9.1.0+cpu (installed directory {torch_dir})",
        "# Do not edit: re-run the command; the rules are in tools/derive_torch_cuda.py.",
        "# 7 entries.",
    ]
    assert list(tomllib.loads(text)) == ["heavy-calls"]
    assert list(tomllib.loads((out / "torch-cuda-driver.toml").read_text())["heavy-calls"]) == [
        "torch.cuda.device_count"
    ]
    capsys.readouterr()
    assert script.main([*args, "--check"]) == 0
    assert capsys.readouterr().out == (
        "torch-cuda.toml: up to date (7 entries)\ntorch-cuda-driver.toml: up to date (1 entries)\n"
    )
    (out / "torch-cuda.toml").write_text(text.replace('"torch.cuda.init"', '"torch.cuda.initialise"'))
    assert script.main([*args, "--check"]) == 1
    assert '+"torch.cuda.init" = ' in capsys.readouterr().out
