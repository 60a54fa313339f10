"""Extra interpreters for the mypy plugin's tests: the oldest supported and the newest mypy, each as its
compiled wheel and as its pure-Python (``py3-none-any``) wheel, in venvs kept outside the repository.

``python tests/mypy_venvs.py`` builds (or refreshes) all four; ``.ci/run`` runs it, so CI tests every
variant. The tests call :func:`find_variant`, which builds a missing venv once and otherwise reuses it;
when the package index cannot be reached and nothing is cached it returns the reason to skip.

The cache: ``$FLAKE8_IMPORTPOLICY_TEST_CACHE`` or ``~/.cache/flake8-importpolicy/mypy-venvs``; one venv
per ``mypy-<version>-<compiled|pure>`` and ``newest.json`` (the newest release found, re-read daily).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from helpers import HANG_CATCHER

OLDEST = "2.4.0"
"""The oldest mypy the plugin supports (setup.cfg: ``mypy>=2.4,<3``)."""
NEWEST_RANGE = "mypy>=2.4,<3"
KINDS = ("compiled", "pure")
_DAY = 24 * 3600


class Variant(NamedTuple):
    """A venv with one mypy build: its Python and what ``mypy --version`` printed."""

    python: Path
    version: str
    kind: str


def cache_root() -> Path:
    root = os.environ.get("FLAKE8_IMPORTPOLICY_TEST_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "flake8-importpolicy"
    return base / "mypy-venvs"


def _pip(*args: str, python: Path | None = None) -> subprocess.CompletedProcess[str]:
    target = ("--python", str(python)) if python is not None else ()
    return subprocess.run(
        [sys.executable, "-m", "pip", *target, *args, "--disable-pip-version-check", "-q"],
        capture_output=True, text=True, timeout=HANG_CATCHER,
    )


def _download_pure(requirement: str, into: Path) -> Path | str:
    """The ``py3-none-any`` wheel of ``requirement``, downloaded into ``into``; or why not."""
    into.mkdir(parents=True, exist_ok=True)
    before = set(into.glob("mypy-*-py3-none-any.whl"))
    done = _pip("download", "--no-deps", "--only-binary=:all:", "--platform", "any", "--implementation",
                "py", "--python-version", f"{sys.version_info[0]}.{sys.version_info[1]}", "-d", str(into),
                requirement)
    if done.returncode != 0:
        return f"cannot download {requirement} from the package index: {done.stderr.strip()[-300:]}"
    wheels = sorted(set(into.glob("mypy-*-py3-none-any.whl")) - before) or sorted(
        into.glob("mypy-*-py3-none-any.whl"))
    if requirement.startswith("mypy=="):
        wheels = [w for w in wheels if w.name.startswith(f"mypy-{requirement[6:]}-")]
    return max(wheels, key=lambda w: _version_key(w.name.split("-")[1])) if wheels else "no wheel"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def newest_version(refresh: bool = False) -> str | None:
    """The newest mypy release in the supported range (cached for a day; ``refresh`` re-reads it)."""
    record = cache_root() / "newest.json"
    try:
        known = json.loads(record.read_text())
    except (OSError, ValueError):
        known = None
    if known and not refresh and time.time() - known["at"] < _DAY:
        return str(known["version"])
    with tempfile.TemporaryDirectory() as tmp:
        wheel = _download_pure(NEWEST_RANGE, Path(tmp))
        if isinstance(wheel, str):
            return str(known["version"]) if known else None
        version = wheel.name.split("-")[1]
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"version": version, "at": time.time()}))
    return version


def find_variant(version: str, kind: str) -> Variant | str:
    """The venv with mypy ``version`` as a ``kind`` ("compiled" or "pure") build, built if missing;
    or the reason it cannot be had (the package index cannot be reached)."""
    root = cache_root() / f"mypy-{version}-{kind}"
    python = root / "bin" / "python"
    done = root / "done.json"
    if done.is_file() and python.exists():
        return Variant(python, json.loads(done.read_text())["version"], kind)
    subprocess.run([sys.executable, "-m", "venv", "--clear", "--without-pip", str(root)], check=True,
                   capture_output=True, timeout=HANG_CATCHER)
    if kind == "pure":
        wheel = _download_pure(f"mypy=={version}", cache_root() / "wheels")
        if isinstance(wheel, str):
            return wheel
        installed = _pip("install", str(wheel), python=python)
    else:
        installed = _pip("install", "--only-binary=mypy", f"mypy=={version}", python=python)
    if installed.returncode != 0:
        return f"cannot install mypy {version} ({kind}): {installed.stderr.strip()[-300:]}"
    shown = subprocess.run([str(python), "-m", "mypy", "--version"], capture_output=True, text=True,
                           timeout=HANG_CATCHER).stdout.strip()
    if f"compiled: {'yes' if kind == 'compiled' else 'no'}" not in shown:
        return f"mypy {version} installed as {kind!r} reports {shown!r}"
    done.write_text(json.dumps({"version": shown}))
    return Variant(python, shown, kind)


def find_all(refresh: bool = False) -> dict[str, Variant | str]:
    """Every variant by id (``2.4.0-compiled``), or the reason it is missing."""
    newest = newest_version(refresh)
    versions = [OLDEST] + ([newest] if newest and newest != OLDEST else [])
    found: dict[str, Variant | str] = {}
    for version in versions:
        for kind in KINDS:
            found[f"{version}-{kind}"] = find_variant(version, kind)
    if newest is None:
        found["newest"] = "cannot find the newest mypy: the package index cannot be reached"
    return found


if __name__ == "__main__":
    failed = False
    for name, variant in find_all(refresh=True).items():
        print(f"{name}: {variant.version if isinstance(variant, Variant) else variant}")
        failed |= isinstance(variant, str)
    sys.exit(1 if failed else 0)
