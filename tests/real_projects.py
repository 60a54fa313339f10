"""Real projects for the adoption walks of tests/test_adopt_real.py, downloaded at a pinned version
from the package index into a cache outside the repository (never committed), with stand-ins for
their heavy dependencies.

The cache: ``$FLAKE8_IMPORTPOLICY_TEST_CACHE`` or ``~/.cache/flake8-importpolicy``, under
``real-projects/``; a download is checked against its pinned SHA-256 and reused while present. When
the package index cannot be reached and nothing is cached, :func:`find_sdist` returns the reason to
skip.

A stand-in is a package whose every attribute is a permissive placeholder (a class that can be
called, subclassed, used as a decorator, compared, indexed): enough for a project's import-time code
to run in a fresh interpreter, so ``importpolicy verify`` really imports its light modules, without
torch or transformers installed. One is written for each module of those packages the project's
sources import, so the static analysis finds a file for each, as it would in the real environment.
"""

from __future__ import annotations

import ast
import hashlib
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from helpers import HANG_CATCHER

PEFT = ("peft", "0.13.2", "0e0cbd40ebdf5fe4ea79f255880d02f96712d18899509369a2cc5768ad46d672")
"""``(name, version, SHA-256 of its sdist)`` of the project the peft walk downloads."""

STANDIN_OF = ("torch", "transformers", "accelerate", "safetensors", "huggingface_hub", "tqdm",
              "packaging")

PLACEHOLDER = '''\
"""A stand-in written by flake8-importpolicy's tests: every name is a permissive placeholder."""
import abc as _abc


class _Placeholder(_abc.ABCMeta):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _placeholder(name)

    def __call__(cls, *args, **kwargs):
        if cls.__dict__.get("_standin") and len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # used as a decorator
        if cls.__dict__.get("_standin"):
            return cls
        return super().__call__(*args, **kwargs)

    def __bool__(cls):
        return not cls.__dict__.get("_standin")

    def __or__(cls, other):
        return cls

    __ror__ = __or__

    def __getitem__(cls, item):
        return cls

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0

    def __lt__(cls, other):
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __hash__(cls):
        return id(cls)

    def __eq__(cls, other):
        return cls is other


def _placeholder(name):
    return _Placeholder(name, (), {"_standin": True})


def attribute(name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    return _placeholder(name)
'''


def write_standins(sources: Path, site: Path) -> list[str]:
    """A placeholder package in ``site`` for each module of STANDIN_OF that ``sources`` import."""
    names: set[str] = set()
    for path in sources.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found = [node.module]
            else:
                continue
            for name in found:
                if name.partition(".")[0] in STANDIN_OF:
                    parts = name.split(".")
                    names.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
    (site / "_importpolicy_standin.py").write_text(PLACEHOLDER)
    for name in sorted(names):
        package = site.joinpath(*name.split("."))
        package.mkdir(parents=True, exist_ok=True)
        text = ('"""A stand-in written by flake8-importpolicy tests."""\n'
                "import _importpolicy_standin\n\n\n"
                "def __getattr__(name):\n"
                "    return _importpolicy_standin.attribute(name)\n")
        if "." not in name:
            text += '\n__version__ = "99.0"\n'
        (package / "__init__.py").write_text(text)
    return sorted(names)


def cache_root() -> Path:
    root = os.environ.get("FLAKE8_IMPORTPOLICY_TEST_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "flake8-importpolicy"
    return base / "real-projects"


def find_sdist(project: tuple[str, str, str]) -> Path | str:
    """The sdist of ``project`` (``(name, version, sha256)``) in the cache, downloaded if missing
    (``pip download --no-deps --no-binary :all:``); or the reason it cannot be had."""
    name, version, digest = project
    into = cache_root() / "sdists"
    path = into / f"{name}-{version}.tar.gz"
    if not path.is_file():
        into.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             "--disable-pip-version-check", "-q", "-d", str(into), f"{name}=={version}"],
            capture_output=True, text=True, timeout=HANG_CATCHER,
        )
        if done.returncode != 0 or not path.is_file():
            return (f"cannot download {name}=={version} from the package index: "
                    f"{done.stderr.strip()[-300:]}")
    found = hashlib.sha256(path.read_bytes()).hexdigest()
    if found != digest:
        path.unlink()
        return f"{path.name} has SHA-256 {found}, not the pinned {digest}: deleted"
    return path


def unpack(sdist: Path, into: Path) -> Path:
    """``sdist`` unpacked into ``into``: the project's directory."""
    with tarfile.open(sdist) as archive:
        if hasattr(tarfile, "data_filter"):  # 3.11.4+
            archive.extractall(into, filter="data")
        else:  # the pinned sdist, checked by its SHA-256
            archive.extractall(into)
    return into / sdist.name.removesuffix(".tar.gz")


def make_venv(where: Path) -> Path:
    """An empty venv at ``where`` (no pip, no system site-packages): its site-packages directory."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True,
                   capture_output=True, timeout=HANG_CATCHER)
    site = subprocess.run(
        [str(where / "bin" / "python"), "-c",
         "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=HANG_CATCHER,
    ).stdout.strip()
    return Path(site)
