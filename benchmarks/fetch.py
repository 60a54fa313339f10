"""Fetch and unpack real wheels for benchmark runs (stdlib only).

Nothing fetched here is ever written into the repository: everything lives
under the cache root, which is ``$IMPORTPOLICY_BENCH_CACHE`` if set, otherwise
``~/.cache/flake8-importpolicy``.

Layout::

    <cache>/wheels/            downloaded wheels (pip download -d)
    <cache>/trees/NAME-VERSION/  unpacked wheel contents (+ .complete marker)
    <cache>/seeded/NAME/       edited copies made by seeded_copy()
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Callable, Optional

MARKER = ".importpolicy-bench-complete"


def cache_root() -> Path:
    env = os.environ.get("IMPORTPOLICY_BENCH_CACHE")
    root = Path(env) if env else Path.home() / ".cache" / "flake8-importpolicy"
    root = root.expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    return root


def _normalize(name: str) -> str:
    # Wheel filenames use the distribution name with runs of -_. replaced by _.
    return re.sub(r"[-_.]+", "_", name).lower()


def _find_wheel(wheels: Path, name: str, version: str) -> Optional[Path]:
    if not wheels.is_dir():
        return None
    prefix = f"{_normalize(name)}-{version}-"
    for whl in sorted(wheels.glob("*.whl")):
        if whl.name.lower().startswith(prefix):
            return whl
    return None


def _download_wheel(name: str, version: str) -> Path:
    wheels = cache_root() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = _find_wheel(wheels, name, version)
    if found is not None:
        return found
    cmd = [
        sys.executable, "-m", "pip", "download",
        f"{name}=={version}",
        "--no-deps", "--only-binary=:all:",
        "-d", str(wheels),
    ]
    print(f"[fetch] {' '.join(cmd)}", file=sys.stderr)
    subprocess.run(cmd, check=True)
    found = _find_wheel(wheels, name, version)
    if found is None:
        raise RuntimeError(f"pip download succeeded but no wheel for {name}=={version} in {wheels}")
    return found


def build_once(dest: Path, build: Callable[[Path], str]) -> Path:
    """Return *dest*, built by *build* unless it is already complete (it has the marker).

    *build* receives a directory that does not exist yet (its parent does), fills it and returns
    the marker's text; it is renamed to *dest* only then, so an interrupted build is started again
    by the next run instead of being used half-made.
    """
    if (dest / MARKER).is_file():
        return dest
    tmp = dest.with_name(dest.name + ".partial")
    for stale in (dest, tmp):
        if stale.exists():
            shutil.rmtree(stale)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    note = build(tmp)
    (tmp / MARKER).write_text(note)
    tmp.rename(dest)
    return dest


def fetch_wheel_tree(name: str, version: str) -> Path:
    """Download NAME==VERSION as a wheel (once) and unpack it (once).

    Returns the directory holding the unpacked wheel, i.e. the directory whose
    children are the top-level packages (usable as a source root).
    """
    tree = cache_root() / "trees" / f"{name}-{version}"

    def unpack(tmp: Path) -> str:
        whl = _download_wheel(name, version)
        print(f"[fetch] unzipping {whl.name} -> {tree}", file=sys.stderr)
        with zipfile.ZipFile(whl) as zf:
            zf.extractall(tmp)
        return f"{whl.name}\n"

    return build_once(tree, unpack)


def seeded_copy(tree: Path, name: str, edit: Callable[[Path], None]) -> Path:
    """Return a cached copy of *tree* named *name*, with *edit* applied once.

    *edit* receives the copy's root directory and modifies files in place. The
    copy is only built when it does not already exist with a completion marker,
    so change *name* whenever the edit changes.
    """
    def copy(tmp: Path) -> str:
        shutil.copytree(tree, tmp, ignore=shutil.ignore_patterns(MARKER, "__pycache__"))
        edit(tmp)
        return f"seeded from {tree}\n"

    return build_once(cache_root() / "seeded" / name, copy)
