"""Profile one ``importpolicy check`` in-process with cProfile, cold or from the facts cache.

Usage::

    python benchmarks/profile_check.py POLICY [--mode cold|facts|warm] [--top 25]
                                       [--sort tottime|cumulative] [--out FILE.prof]

``cold``: no cache at all (what ``--no-cache`` runs). ``facts``: a populated facts cache, no
answers cache (every closure is traversed again, nothing is parsed). ``warm``: the whole-answer
cache (``check_policy_cached``), populated by an untimed first call. The benchmark scripts write
policies under ``<bench cache>/bench/`` (for example ``bench/compare/vllm/policy.toml``); the
profile includes the engine only (not interpreter start-up nor the CLI's imports: see
``python -X importtime -m flake8_importpolicy --version`` for those).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("policy", type=Path)
    ap.add_argument("--mode", choices=("cold", "facts", "warm"), default="cold")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--sort", default="tottime")
    ap.add_argument("--out", type=Path, help="also dump the raw profile here (for snakeviz etc.)")
    args = ap.parse_args(argv)

    from flake8_importpolicy.analysis.engine import PolicyEngine
    from flake8_importpolicy.answers.facts_cache import DiskFactsCache
    from flake8_importpolicy.answers.whole import check_policy_cached
    from flake8_importpolicy.config.load import load_policy

    policy = load_policy(args.policy.resolve())
    scratch = Path(tempfile.mkdtemp(prefix="ip-profile-"))
    try:
        if args.mode == "facts":
            PolicyEngine(policy, facts_cache=DiskFactsCache(scratch)).check()  # populate

            def job() -> object:
                return PolicyEngine(policy, facts_cache=DiskFactsCache(scratch)).check()
        elif args.mode == "warm":
            check_policy_cached(policy)  # populate (uses settings.cache-dir)

            def job() -> object:
                return check_policy_cached(policy)
        else:
            def job() -> object:
                return PolicyEngine(policy).check()
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        report = job()
        profiler.disable()
        elapsed = time.perf_counter() - started
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    violations = len(getattr(report, "violations", ()))
    print(f"{args.mode}: {elapsed:.2f} s under cProfile, {violations} violations")
    if args.out:
        profiler.dump_stats(args.out)
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.strip_dirs().sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
