"""Generate a synthetic monorepo-shaped source tree of N modules with a fixed-size light closure.

Usage::

    python benchmarks/synthetic.py 10000 [--core 60] [--seed 0]   # prints the tree's path

Layout of the generated tree (under ``<bench cache>/synthetic/``, never inside the repository)::

    synth/__init__.py                 docstring only
    synth/core/__init__.py            docstring only
    synth/core/cNNN.py                the light closure: ``--core`` modules; each imports 1-3
                                      earlier core modules and the stdlib at module level, some
                                      import a bulk module inside a function or under
                                      ``if TYPE_CHECKING:`` (never run at import time)
    synth/plugins/p0.py               imported at module level by the last core module
    synth/heavy/__init__.py           the heavy module (imported by p0 and by 5% of bulk modules)
    synth/bulk/bNNNN/__init__.py      packages of 100 modules each
    synth/bulk/bNNNN/mNNN.py          the rest: each imports 3 random bulk modules, 1 core module
                                      and sometimes a sibling (relative) at module level, plus
                                      function-level imports; ~50 lines of classes and functions

The light modules of :data:`LIGHT` are core modules, so what importing them runs (the core, p0 and
the heavy package: ``--core`` + 5 modules) does not depend on N. One violation is built in:
``synth.core.c<last>`` -> ``synth.plugins.p0`` -> ``synth.heavy``. Output is deterministic for
given (N, core, seed).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fetch import build_once, cache_root  # noqa: E402

GENERATOR_VERSION = 1
PACKAGE_SIZE = 100
DEFAULT_CORE = 60


def light_modules(core: int = DEFAULT_CORE) -> list[str]:
    """Five core modules spread over the core, the last one included (it has the violation)."""
    picks = sorted({core // 12, core // 4, core // 2, (3 * core) // 4, core - 1})
    return [f"synth.core.c{i:03d}" for i in picks]


HEAVY = [("synth.heavy", "stands in for a framework that takes seconds to import")]

_STDLIB = ["os", "sys", "json", "re", "typing", "functools", "itertools", "collections",
           "dataclasses", "logging", "pathlib", "enum"]

_BODY = '''

class {cls}:
    """Synthetic class {n}."""

    limit = {n}

    def __init__(self, value: int = 0) -> None:
        self.value = value
        self.items = [value * i for i in range({small})]

    def total(self) -> int:
        result = 0
        for item in self.items:
            if item % 3 == 0:
                result += item
            elif item % 5 == 0:
                result -= item
            else:
                result ^= item
        return result

    @property
    def name(self) -> str:
        return f"{{type(self).__name__}}-{{self.value}}"


def helper_{n}(data: dict, key: str = "k{n}") -> object:
    """A function with a lazy import (grimp sees it; it never runs at import time)."""
    {lazy}
    return data.get(key, {n})


CONSTANT_{n} = {{"a": {n}, "b": [{n}, {small}], "c": "text {n}"}}
'''


def _module_source(rng: random.Random, n: int, imports: list[str], lazy: str,
                   typing_only: str | None) -> str:
    std = rng.sample(_STDLIB, 2)
    lines = [f'"""Synthetic module {n}."""', "", "from __future__ import annotations", ""]
    lines += [f"import {m}" for m in std]
    lines += imports
    if typing_only:
        lines += ["from typing import TYPE_CHECKING", "", "if TYPE_CHECKING:",
                  f"    import {typing_only}"]
    lines.append("")
    body = _BODY.format(cls=f"Thing{n}", n=n, small=n % 7 + 2, lazy=lazy)
    return "\n".join(lines) + body


def _write(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def generate(modules: int, *, core: int = DEFAULT_CORE, seed: int = 0) -> Path:
    """Build (once) and return the root directory of a synthetic tree with ``modules`` modules.

    ``modules`` counts every ``.py`` file, ``__init__`` files included.
    """
    if modules < core + 10:
        raise ValueError(f"modules must be at least core + 10 = {core + 10}")
    root = cache_root() / "synthetic" / f"synth-{modules}-c{core}-s{seed}-v{GENERATOR_VERSION}"
    return build_once(root, lambda tmp: _generate(tmp, modules, core, seed))


def _generate(tmp: Path, modules: int, core: int, seed: int) -> str:
    """Write the tree of :func:`generate` into ``tmp``; the marker's text."""
    rng = random.Random(seed)
    pkg = tmp / "synth"

    fixed = 6  # synth, core, plugins, plugins.p0, heavy and bulk __init__ files
    bulk_total = modules - core - fixed  # bulk package __init__ files included
    packages = max(1, -(-bulk_total // (PACKAGE_SIZE + 1)))
    leaves = bulk_total - packages
    per_package = [leaves // packages + (1 if i < leaves % packages else 0) for i in range(packages)]
    bulk = [f"synth.bulk.b{p:04d}.m{m:03d}" for p in range(packages) for m in range(per_package[p])]

    for directory in (pkg, pkg / "core", pkg / "plugins", pkg / "heavy", pkg / "bulk"):
        directory.mkdir(parents=True)
    _write(pkg / "__init__.py", '"""Synthetic monorepo root package (imports nothing)."""\n')
    _write(pkg / "core" / "__init__.py", '"""The light core."""\n')
    _write(pkg / "plugins" / "__init__.py", '"""Plugins."""\n')
    _write(pkg / "plugins" / "p0.py", '"""Plugin that needs the heavy package."""\n\n'
           "import synth.heavy\n\nREADY = synth.heavy.LOADED\n")
    _write(pkg / "heavy" / "__init__.py", '"""The heavy package."""\n\nimport json\n\nLOADED = True\n')
    _write(pkg / "bulk" / "__init__.py", '"""Bulk packages."""\n')

    core_names = [f"synth.core.c{i:03d}" for i in range(core)]
    core_rng = random.Random(seed)  # the core's own imports do not depend on ``modules``
    for i, name in enumerate(core_names):
        earlier = core_rng.sample(core_names[:i], min(i, core_rng.randint(1, 3))) if i else []
        imports = [f"import {m}" for m in earlier]
        if i == core - 1:
            imports.append("from synth.plugins import p0")
        lazy_target = rng.choice(bulk) if bulk and i % 4 == 0 else "json"
        typing_only = rng.choice(bulk) if bulk and i % 5 == 0 else None
        text = _module_source(core_rng, i, imports, f"import {lazy_target}  # noqa: F401",
                              typing_only)
        _write(pkg / "core" / f"c{i:03d}.py", text)

    count = 0
    for p in range(packages):
        directory = pkg / "bulk" / f"b{p:04d}"
        directory.mkdir()
        _write(directory / "__init__.py", f'"""Bulk package {p}."""\n')
        for m in range(per_package[p]):
            count += 1
            picks = rng.sample(bulk, min(3, len(bulk)))
            imports = [f"import {t}" for t in picks if t != f"synth.bulk.b{p:04d}.m{m:03d}"]
            imports.append(f"from synth.core import c{rng.randrange(core):03d}")
            if m > 0 and rng.random() < 0.5:
                imports.append(f"from . import m{rng.randrange(m):03d}")
            if rng.random() < 0.05:
                imports.append("import synth.heavy")
            lazy = f"from synth.bulk.b{rng.randrange(packages):04d} import m000  # noqa: F401"
            _write(directory / f"m{m:03d}.py",
                   _module_source(rng, count, imports, lazy, rng.choice(bulk)))
    return f"synthetic tree: {modules} modules, core {core}, seed {seed}\n"


def count_py(root: Path) -> int:
    return sum(len([f for f in files if f.endswith(".py")]) for _, _, files in os.walk(root))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modules", type=int)
    ap.add_argument("--core", type=int, default=DEFAULT_CORE)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    root = generate(args.modules, core=args.core, seed=args.seed)
    print(root)
    print(f"{count_py(root)} .py files; light modules: {', '.join(light_modules(args.core))}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
