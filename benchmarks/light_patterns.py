"""How ``importpolicy check`` grows with the number of light modules a policy names (issue 15).

Usage::

    python benchmarks/light_patterns.py [--sizes 2000,10000] [--runs 3]

Three generated projects per size N (under ``<bench cache>/bench/light_patterns/``, never in the
repository), each checked cold (``--no-cache``) ``--runs`` times, alternating:

- ``stale keys``: N ``[light."zoo.goneNNNNN"]`` keys that match no module (N IPL003 problems, each
  with its line in the policy; their lines were found by reading the policy once per key);
- ``existing keys``: N modules ``zoo.mNNNNN``, each named by a ``[light]`` key (one in a hundred
  imports the heavy module; the rules of a module were looked for among all N keys);
- ``big.**``: one ``[light."big.**"]`` pattern over a package of N modules whose ``__init__`` imports
  them all, the last of which imports the heavy module (each light module walked the whole package
  again through its parent).

Printed: the median wall time of each and the ratio of the largest size to the smallest. Issue 15
asks for time(10,000) / time(2,000) <= 7 (5x the size: linear is 5, quadratic 25).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    Series,
    bench_env,
    cache_root,
    fmt_s,
    fresh_dir,
    load_average,
    measure,
    prewarm_bytecode,
    script,
    table,
)

HEAD = '[settings]\nsource-roots = ["src"]\n[heavy]\n"zoo.heavy" = "slow"\n'


def _write(root: Path, files: dict[str, str]) -> Path:
    """``files`` under ``root``, each directory made once (10,000 files share a few)."""
    for directory in sorted({(root / name).parent for name in files}):
        directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def stale_keys(root: Path, n: int) -> Path:
    keys = "".join(f'[light."zoo.gone{i:05d}"]\nreason = "r"\n' for i in range(n))
    return _write(root, {"policy.toml": HEAD + keys, "src/zoo/__init__.py": "", "src/zoo/heavy.py": ""})


def existing_keys(root: Path, n: int) -> Path:
    keys = "".join(f'[light."zoo.m{i:05d}"]\nreason = "r"\n' for i in range(n))
    modules = {f"src/zoo/m{i:05d}.py": "import zoo.heavy\n" if i % 100 == 0 else "" for i in range(n)}
    return _write(root, {"policy.toml": HEAD + keys, "src/zoo/__init__.py": "", "src/zoo/heavy.py": "",
                         **modules})


def double_star(root: Path, n: int) -> Path:
    modules = {f"src/big/m{i:05d}.py": "" for i in range(n - 1)}
    return _write(root, {
        "policy.toml": HEAD + '[light."big.**"]\nreason = "r"\n',
        "src/zoo/__init__.py": "", "src/zoo/heavy.py": "",
        "src/big/__init__.py": "".join(f"from . import m{i:05d}\n" for i in range(n)),
        **modules, f"src/big/m{n - 1:05d}.py": "import zoo.heavy\n",
    })


SCENARIOS = {"stale keys": stale_keys, "existing keys": existing_keys, "big.**": double_star}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="2000,10000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    work = fresh_dir(cache_root() / "bench" / "light_patterns")
    prewarm_bytecode()
    env = bench_env()
    roots = {(name, n): make(work / f"{name.replace(' ', '-').replace('*', 's')}-{n}", n)
             for name, make in SCENARIOS.items() for n in sizes}
    series = {key: Series(f"{key[0]} x {key[1]}") for key in roots}
    print(f"load average before: {load_average()}", flush=True)
    for _ in range(args.runs):
        for key, root in roots.items():
            run = measure([script("importpolicy"), "check", "--no-cache"], cwd=root, env=env)
            if run.returncode not in (0, 1):
                raise SystemExit(f"importpolicy failed on {key}: {run.stderr[-2000:]}")
            series[key].runs.append(run)
    rows = []
    for name in SCENARIOS:
        small, large = series[(name, sizes[0])], series[(name, sizes[-1])]
        rows.append((name, *(fmt_s(series[(name, n)].median) for n in sizes),
                     f"{large.median / small.median:.1f}"))
    print(table(["scenario", *(f"N = {n} (s)" for n in sizes), f"ratio {sizes[-1]} / {sizes[0]}"], rows))
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
