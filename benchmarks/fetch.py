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


def fetch_wheel_tree(name: str, version: str) -> Path:
    """Download NAME==VERSION as a wheel (once) and unpack it (once).

    Returns the directory holding the unpacked wheel, i.e. the directory whose
    children are the top-level packages (usable as a source root).
    """
    tree = cache_root() / "trees" / f"{name}-{version}"
    if (tree / MARKER).is_file():
        return tree
    whl = _download_wheel(name, version)
    if tree.exists():
        shutil.rmtree(tree)  # half-finished earlier attempt
    tmp = tree.with_name(tree.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    print(f"[fetch] unzipping {whl.name} -> {tree}", file=sys.stderr)
    with zipfile.ZipFile(whl) as zf:
        zf.extractall(tmp)
    (tmp / MARKER).write_text(f"{whl.name}\n")
    tmp.rename(tree)
    return tree


def seeded_copy(tree: Path, name: str, edit: Callable[[Path], None]) -> Path:
    """Return a cached copy of *tree* named *name*, with *edit* applied once.

    *edit* receives the copy's root directory and modifies files in place. The
    copy is only built when it does not already exist with a completion marker,
    so change *name* whenever the edit changes.
    """
    dest = cache_root() / "seeded" / name
    if (dest / MARKER).is_file():
        return dest
    tmp = dest.with_name(dest.name + ".partial")
    for p in (dest, tmp):
        if p.exists():
            shutil.rmtree(p)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(tree, tmp, ignore=shutil.ignore_patterns(MARKER, "__pycache__"))
    edit(tmp)
    (tmp / MARKER).write_text(f"seeded from {tree}\n")
    tmp.rename(dest)
    return dest
