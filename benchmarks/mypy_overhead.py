"""What the mypy plugin adds to a mypy run: wall time with and without ``plugins = flake8_importpolicy.mypy``.

Usage::

    python benchmarks/mypy_overhead.py [--modules 300] [--repeat 7] [--workers 0] [--keep DIR]
    python benchmarks/mypy_overhead.py --package libcst [--heavy typing_extensions] [--repeat 3]

Generates a synthetic typed project (``--modules`` modules in ten packages; classes, annotated functions
and imports between modules, some under ``if TYPE_CHECKING:``; a policy of five light patterns, one a
wildcard, with findings in about thirty light modules), then times ``python -m mypy -p proj`` in one go,
alternating the two configs run by run so that machine drift hits both alike:

- cold: the mypy cache and the importpolicy cache are deleted before every run (this includes checking
  the standard library stubs, as a first CI run does);
- warm: after one untimed run per config; nothing changes between runs (the common CI case).

With ``--package NAME`` it checks a copy of an installed package instead (``follow_imports = silent``
for its dependencies; the package and its subpackages light, ``--heavy`` forbidden): real modules
cost mypy far more than the generated ones, so the generated project is the worse case for the
plugin's relative overhead.

Prints the median (and the minimum, the least disturbed run on a busy machine) wall time and CPU time
(user + system, the workers and the plugin's helper process included) of ``--repeat`` runs per case,
and the plugin's overhead. Installs nothing: it needs mypy and this package (``pip install -e .``) in
the running interpreter. POSIX only (``resource``).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import measure  # noqa: E402

PACKAGES = 10
POLICY = """\
version = 1

[settings]
source-roots = ["src"]

[heavy]
"proj.heavy" = "stands for torch: seconds to import"

[light."proj.pkg0"]
reason = "imported by the CLI"

[light."proj.pkg1.mod0"]
reason = "imported by the CLI"

[light."proj.pkg2.*"]
reason = "plugins loaded at start-up"

[light."proj.pkg9.mod3"]
reason = "imported by workers before fork"

[light."proj.pkg5"]
reason = "imported by the API server"
"""


def module_source(rng: random.Random, package: int, index: int, per_package: int) -> str:
    """One module: imports of earlier modules (some type-checking only), a class and functions."""
    lines = ["from __future__ import annotations", "", "from typing import TYPE_CHECKING", ""]
    deps = sorted({(rng.randrange(package + 1), rng.randrange(per_package)) for _ in range(3)})
    deps = [(p, i) for p, i in deps if (p, i) < (package, index)]
    checking_only = []
    for number, (p, i) in enumerate(deps):
        if number % 2:
            checking_only.append((p, i))
        else:
            lines.append(f"from proj.pkg{p}.mod{i} import Thing{p}_{i}, make{p}_{i}")
    if checking_only:
        lines += ["", "if TYPE_CHECKING:"]
        lines += [f"    from proj.pkg{p}.mod{i} import Thing{p}_{i}" for p, i in checking_only]
    if (package, index) in ((1, 0), (9, 3)):
        lines.append("import proj.heavy")  # a violation: a light module imports the heavy one
    name = f"{package}_{index}"
    lines += ["", "", f"class Thing{name}:", f'    """Thing {name}."""', "",
              "    def __init__(self, size: int, label: str = \"x\") -> None:",
              "        self.size = size", "        self.label = label", "        self.items: list[int] = []",
              "", "    def grow(self, by: int) -> int:",
              "        self.items.extend(range(by))", "        return len(self.items) + self.size",
              "", "    def describe(self) -> dict[str, object]:",
              '        return {"size": self.size, "label": self.label, "n": len(self.items)}',
              "", "", f"def make{name}(size: int) -> Thing{name}:",
              f"    thing = Thing{name}(size)", "    thing.grow(size % 7)", "    return thing"]
    for p, i in deps:
        lines += ["", "", f"def use{p}_{i}(thing: Thing{p}_{i}) -> int:",
                  "    total = 0", "    for value in thing.items:", "        total += value * thing.size",
                  "    return total"]
        if (p, i) not in checking_only:
            lines += [f"def build{p}_{i}() -> int:", f"    return use{p}_{i}(make{p}_{i}(3))"]
    return "\n".join(lines) + "\n"


def generate(root: Path, modules: int) -> None:
    rng = random.Random(4)
    per_package = max(1, modules // PACKAGES)
    src = root / "src" / "proj"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text('"""Synthetic project for the mypy plugin benchmark."""\n')
    (src / "heavy.py").write_text("LOADED: bool = True\n")
    for package in range(PACKAGES):
        directory = src / f"pkg{package}"
        directory.mkdir()
        (directory / "__init__.py").write_text(
            f"from proj.pkg{package}.mod0 import Thing{package}_0\n\n__all__ = ['Thing{package}_0']\n")
        for index in range(per_package):
            (directory / f"mod{index}.py").write_text(module_source(rng, package, index, per_package))
    (root / "policy.toml").write_text(POLICY)
    (root / "plain.ini").write_text("[mypy]\nmypy_path = src\n")
    (root / "plugin.ini").write_text("[mypy]\nmypy_path = src\nplugins = flake8_importpolicy.mypy\n")


def copy_package(root: Path, name: str, heavy: str) -> str:
    """Copy the installed package ``name`` into ``root/src`` with a policy: the package and each of
    its subpackages light, ``heavy`` forbidden. Returns the package name to check."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"{name} is not an installed package")
    shutil.copytree(next(iter(spec.submodule_search_locations)), root / "src" / name,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    (root / "policy.toml").write_text(
        f'version = 1\n\n[settings]\nsource-roots = ["src"]\n\n[heavy]\n"{heavy}" = "heavy"\n\n'
        f'[light."{name}"]\nreason = "the package root"\n\n[light."{name}.*"]\nreason = "subpackages"\n'
    )
    for config, extra in (("plain.ini", ""), ("plugin.ini", "plugins = flake8_importpolicy.mypy\n")):
        (root / config).write_text(f"[mypy]\nmypy_path = src\nfollow_imports = silent\n{extra}")
    return name


def run(root: Path, config: str, workers: int, package: str = "proj") -> tuple[float, float, int]:
    """One mypy run: wall time, CPU time (user + system, the workers included) and findings shown."""
    args = [sys.executable, "-m", "mypy", "--config-file", config, "--cache-dir", f".cache-{config}",
            "-p", package]
    if workers:
        args += ["-n", str(workers)]
    # As installed: byte code is cached (a CI image may set PYTHONDONTWRITEBYTECODE for its own reasons).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = measure(args, cwd=root, env=env, peak=False)
    expected = (proc.returncode == 1) == (config == "plugin.ini") or package != "proj"
    if proc.returncode not in (0, 1) or not expected:
        sys.exit(f"unexpected mypy result ({config}, exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc.wall, proc.cpu, proc.stdout.count("[import-policy]")


def clear(root: Path) -> None:
    for name in (".cache-plain.ini", ".cache-plugin.ini", ".importpolicy_cache"):
        shutil.rmtree(root / name, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--workers", type=int, default=0, help="mypy -n (0: sequential)")
    parser.add_argument("--keep", type=Path, help="generate into this directory and keep it")
    parser.add_argument("--package", help="check a copy of this installed package instead")
    parser.add_argument("--heavy", default="typing_extensions", help="with --package: the heavy pattern")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="mypy-overhead-"))
    if args.keep and root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    package = "proj"
    if args.package:
        package = copy_package(root, args.package, args.heavy)
    else:
        generate(root, args.modules)
    count = len(list((root / "src").rglob("*.py")))
    print(f"{count} modules in {root}; mypy -p {package}{f' -n {args.workers}' if args.workers else ''}; "
          f"median of {args.repeat} runs")
    try:
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        findings = 0
        for case in ("cold", "warm"):
            if case == "warm":
                for config in ("plain.ini", "plugin.ini"):
                    run(root, config, args.workers, package)
            for _ in range(args.repeat):
                for config in ("plain.ini", "plugin.ini"):
                    if case == "cold":
                        clear(root)
                    elapsed, cpu, found = run(root, config, args.workers, package)
                    times.setdefault((case, config), []).append((elapsed, cpu))
                    findings = max(findings, found)
        print(f"plugin findings reported: {findings}")
        for case in ("cold", "warm"):
            for index, what in enumerate(("wall", "cpu")):
                for name, pick in (("median", statistics.median), ("min", min)):
                    plain = pick(t[index] for t in times[(case, "plain.ini")])
                    plugin = pick(t[index] for t in times[(case, "plugin.ini")])
                    print(f"{case} {what} {name}: without plugin {plain:.3f} s, with plugin {plugin:.3f} s, "
                          f"overhead {plugin - plain:+.3f} s ({(plugin / plain - 1) * 100:+.1f} %)")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
