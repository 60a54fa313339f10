"""A cold ``importpolicy check`` whose closure is a whole 10,000-module tree, with one job and with
workers: workers must never make it slower (issue 15: 51 s with workers against 7.9 s serial, when every
file a worker wrote re-listed the facts cache to prune it).

Usage::

    python benchmarks/parallel_cold.py [--modules 10000] [--runs 3] [--jobs N]

The tree is ``synthetic.py``'s; its light modules here are three bulk modules, whose import-time
closures (three random imports per bulk module) cover almost the whole tree. Each run starts with no
cache (the cache directory is deleted); ``--jobs 1``, ``--jobs N`` and ``--jobs N`` with workers
forced (the load-average and pace gates off: workers start after 100 files whatever the machine's
load and however small the files, so only the pool's own account can stop them) alternate. Printed:
the files parsed, the median, minimum and maximum wall time and CPU time of each, and each ratio to
``--jobs 1``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    Series,
    bench_env,
    cache_root,
    count_facts,
    fmt_s,
    fresh_dir,
    load_average,
    measure,
    policy_toml,
    prewarm_bytecode,
    script,
    table,
)
from synthetic import generate  # noqa: E402

FORCED = (
    "import sys; from flake8_importpolicy.analysis import parallel; "
    "parallel._cpus_idle = lambda jobs: True; parallel._MIN_PACE = 0.0; "
    "from flake8_importpolicy.cli import run; sys.argv[0] = 'importpolicy'; run()"
)
LIGHT = [(f"synth.bulk.b000{n}.m000", "its closure is the whole tree") for n in range(3)]
HEAVY = [("synth.heavy", "stands in for a framework that takes seconds to import")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modules", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args(argv)
    tree = generate(args.modules)
    work = fresh_dir(cache_root() / "bench" / "parallel_cold")
    cache = work / "cache"
    policy = work / "policy.toml"
    policy.write_text(policy_toml(tree, LIGHT, HEAVY, cache_dir=str(cache)))
    prewarm_bytecode()
    env = bench_env()
    importpolicy = [script("importpolicy")]
    forced = [sys.executable, "-c", FORCED]
    variants = {
        "--jobs 1": (importpolicy, 1),
        f"--jobs {args.jobs}": (importpolicy, args.jobs),
        f"--jobs {args.jobs}, workers forced": (forced, args.jobs),
    }
    series = {label: Series(label) for label in variants}
    parsed = 0
    print(f"{args.modules} modules, {args.runs} cold runs each, load average before: {load_average()}",
          flush=True)
    for _ in range(args.runs):
        for label, (command, jobs) in variants.items():
            shutil.rmtree(cache, ignore_errors=True)
            argv = [*command, "check", "--policy", str(policy), "--jobs", str(jobs)]
            run = measure(argv, cwd=work, env=env)
            if run.returncode not in (0, 1):
                raise SystemExit(f"importpolicy failed ({run.returncode}): {run.stderr[-2000:]}")
            parsed = count_facts(cache)
            series[label].runs.append(run)
    serial = series["--jobs 1"].median
    rows = [(s.label, parsed, fmt_s(s.median), f"{fmt_s(s.spread[0])}-{fmt_s(s.spread[1])}", fmt_s(s.cpu),
             f"{s.median / serial:.2f}") for s in series.values()]
    print(table(["run", "files parsed", "median s", "min-max s", "CPU s", "/ --jobs 1"], rows))
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
