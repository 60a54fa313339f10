"""Warm ``importpolicy why`` against warm ``importpolicy check`` (issue 30 item 6).

Usage::

    python benchmarks/why_warm.py [--runs 7] [--codebase vllm|transformers|torch] [--module M]
                                  [--heavy PATTERN] [--external stop|auto|follow]
                                  [--engine-rev REV] [--summary-json PATH]

The codebase's tree (``fetch.py``, cached outside the repository; vLLM 0.33.0 by default) with its
5-light policy of ``common.CODEBASES`` (written under ``<bench cache>/bench/why_warm-*``, the tree
untouched). One untimed run of each command fills the caches; then ``--runs`` rounds, each a warm
``check --format json``, a warm ``why MODULE`` (default: the codebase's first light module, whose
closure ``check`` traversed) and a warm ``why MODULE --heavy PATTERN`` (one chain; default: the first
heavy entry), each a fresh process timed from outside (``common.measure``: wall clock, and CPU time
with GNU time). Prints the medians.

``--external`` replaces the policy's ``external = "stop"`` (``follow`` also walks the standard
library: a larger closure, as a project's closure through installed packages is). ``--engine-rev
REV`` runs the engine of that git revision instead of the working tree's
(``common.snapshot_engine_rev``, in a work directory of its own, so the two never share a cache): run
the script with and without it to compare. Before ``why`` had an answer index of its own
(``answers/why.py``), a warm ``why`` read, hashed and decoded every module of its closure and asked
the interpreter again.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    CODEBASES, Run, bench_env, cache_root, fmt_s, load_average, measure, prewarm_bytecode, script,
    snapshot_engine_rev, table, write_setup,
)
from fetch import fetch_wheel_tree  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--codebase", choices=sorted(CODEBASES), default="vllm")
    parser.add_argument("--module")
    parser.add_argument("--heavy")
    parser.add_argument("--external", choices=("stop", "auto", "follow"), default="stop")
    parser.add_argument("--engine-rev", metavar="REV")
    parser.add_argument("--summary-json", type=Path)
    args = parser.parse_args()
    codebase = CODEBASES[args.codebase]
    module = args.module or codebase.light[0][0]
    heavy = args.heavy or codebase.heavy[0][0]
    tree = fetch_wheel_tree(codebase.dist, codebase.version)
    engine_path = None
    work = f"why_warm-{codebase.key}-{args.external}"
    if args.engine_rev:
        engine_path, note = snapshot_engine_rev(args.engine_rev)
        work += f"-{engine_path.name}"
        print(note)
    setup = write_setup(cache_root() / "bench" / work, tree, codebase.packages,
                        codebase.light, codebase.heavy)
    policy_text = setup.policy.read_text()
    setup.policy.write_text(policy_text.replace('external = "stop"', f'external = "{args.external}"'))
    env = bench_env(engine_path)
    prewarm_bytecode()
    importpolicy = script("importpolicy")
    policy = ["--policy", str(setup.policy)]
    commands = {
        "check (warm)": [importpolicy, "check", *policy, "--format", "json"],
        f"why {module} (warm)": [importpolicy, "why", *policy, module],
        f"why {module} --heavy {heavy} (warm)": [importpolicy, "why", *policy, module, "--heavy", heavy],
    }
    for argv in commands.values():  # fill the facts cache and the answers
        first = measure(argv, cwd=setup.work, env=env)
        if first.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(argv)} exited {first.returncode}:\n{first.stderr}")
    runs: dict[str, list[Run]] = {label: [] for label in commands}
    for _ in range(args.runs):
        for label, argv in commands.items():  # interleaved: a load change hits every row alike
            runs[label].append(measure(argv, cwd=setup.work, env=env))
    summary = {
        label: {
            "wall_median_s": statistics.median(run.wall for run in values),
            "cpu_median_s": statistics.median(run.cpu for run in values),
            "runs": len(values),
        }
        for label, values in runs.items()
    }
    print(f"{codebase.dist} {codebase.version}, external = {args.external!r}, {args.runs} runs each, load "
          f"average {load_average()}")
    print(table(
        ("command", "wall median (s)", "CPU median (s)"),
        ((label, fmt_s(row["wall_median_s"]), fmt_s(row["cpu_median_s"]))
         for label, row in summary.items()),
    ))
    if args.summary_json:
        args.summary_json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
