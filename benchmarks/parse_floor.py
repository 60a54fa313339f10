"""The parsing floor of a cold check: what ``ast.parse`` alone costs for the files a policy's closures need.

Usage::

    python benchmarks/parse_floor.py [--codebases vllm,transformers,torch] [--runs 5]

A cold ``importpolicy check`` must at least parse every file of its light modules' import-time
closures with CPython's parser (C code, one core per process). This script finds those files (one
in-process check of the same policy ``compare.py`` uses), then, ``--runs`` times and alternating,
times in fresh processes:

- ``ast.parse`` of exactly those files, one after the other (garbage collector paused, as the engine
  does), inside a ``python -c`` that imports nothing else: the serial floor of a whole-file parser;
- the same with function bodies blanked first (``flake8_importpolicy.analysis.skeleton``, what the engine
  parses): the serial floor of this engine's parsing;
- ``importpolicy check --no-cache --jobs 1`` and ``--jobs N`` (N = the CPUs);
- ``lint-imports --no-cache`` (the target's reference).

It prints medians and the floor's ratio to lint-imports cold, serial and divided by the CPUs (the
best any number of worker processes could do). When even the divided floor is above the 0.30 target,
the target cannot be met by any engine built on ``ast.parse`` on this machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    CODEBASES,
    Series,
    bench_env,
    cache_root,
    engine_env,
    fmt_s,
    importpolicy_argv,
    lint_imports_argv,
    load_average,
    measure,
    prewarm_bytecode,
    table,
    write_setup,
)
from fetch import fetch_wheel_tree  # noqa: E402

PARSE_ALL = """\
import ast, gc, json, sys
paths = json.load(open(sys.argv[1]))
gc.disable()
for path in paths:
    with open(path, "rb") as handle:
        ast.parse(handle.read())
"""

_SKELETON_ALL = """\
import ast, gc, json, sys
from flake8_importpolicy.analysis.skeleton import blank_function_bodies
paths = json.load(open(sys.argv[1]))
gc.disable()
for path in paths:
    with open(path, "rb") as handle:
        source = handle.read()
    ast.parse(blank_function_bodies(source) or source)
"""


def closure_files(policy: Path) -> list[str]:
    """The source files a cold check of ``policy`` parses (first party and any followed)."""
    from flake8_importpolicy.analysis.engine import PolicyEngine
    from flake8_importpolicy.config.load import load_policy

    with PolicyEngine(load_policy(policy), jobs=1) as engine:
        engine.check()
        files, _ = engine.find_dependencies()
    return sorted(str(path) for path, digest in files.items() if digest)


def bench(key: str, runs: int, jobs: int) -> list[object]:
    cb = CODEBASES[key]
    tree = fetch_wheel_tree(cb.dist, cb.version)
    work = cache_root() / "bench" / "parse_floor" / key
    setup = write_setup(work, tree, cb.packages, cb.light, cb.heavy)
    paths = closure_files(setup.policy)
    listing = work / "closure.json"
    listing.write_text(json.dumps(paths))
    size = sum(Path(p).stat().st_size for p in paths)
    rows = [
        ("ast.parse of the closure", [sys.executable, "-c", PARSE_ALL, str(listing)], bench_env()),
        ("skeleton + ast.parse of the closure", [sys.executable, "-c", _SKELETON_ALL, str(listing)],
         engine_env()),
        ("importpolicy cold -j1", importpolicy_argv(setup, cache=False) + ["--jobs", "1"],
         engine_env()),
        (f"importpolicy cold -j{jobs}", importpolicy_argv(setup, cache=False) + ["--jobs", str(jobs)],
         engine_env()),
        ("lint-imports cold", lint_imports_argv(setup, cache=False), bench_env(setup.tree)),
    ]
    series = {label: Series(label) for label, _, _ in rows}
    for label, argv, env in rows:  # untimed: bytecode, caches of the OS
        measure(argv, cwd=work, env=env)
    for _ in range(runs):
        for label, argv, env in rows:
            series[label].runs.append(measure(argv, cwd=work, env=env))
    print(f"\n### {key} {cb.version}: {len(paths)} files in the closures, {size / 2**20:.1f} MiB\n")
    print(table(
        ["row", f"median wall s ({runs} runs)", "min-max s", "median CPU s"],
        [[s.label, fmt_s(s.median), "-".join(fmt_s(x) for x in s.spread), fmt_s(s.cpu)]
         for s in series.values()],
    ))
    floor = series["ast.parse of the closure"].median  # includes one interpreter start-up
    skeleton = series["skeleton + ast.parse of the closure"].median
    lint = series["lint-imports cold"].median
    return [
        key, len(paths), fmt_s(floor), f"{floor / lint:.2f}",
        f"{floor / jobs / lint:.2f}", fmt_s(skeleton), f"{skeleton / lint:.2f}",
        f"{series['importpolicy cold -j1'].median / lint:.2f}",
        f"{series[f'importpolicy cold -j{jobs}'].median / lint:.2f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--codebases", default="vllm,transformers,torch")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from flake8_importpolicy.analysis.parallel import default_jobs

    jobs = default_jobs()
    prewarm_bytecode()
    print(f"load average before: {load_average()}; CPUs: {jobs}")
    summary = [bench(key, args.runs, jobs) for key in args.codebases.split(",")]
    print(f"\n### Ratios to lint-imports cold (medians; target <= 0.30); load after: {load_average()}\n")
    print(table(
        ["codebase", "files", "ast.parse s", "floor / li", f"floor / {jobs} CPUs / li",
         "skeleton + parse s", "skeleton floor / li", "ip -j1 / li", f"ip -j{jobs} / li"],
        summary,
    ))


if __name__ == "__main__":
    main()
