"""Do two engines give byte-identical answers? ``check`` and ``why`` JSON, real codebases and fixtures.

Usage::

    python benchmarks/same_output.py --engine-rev REV [--codebases vllm,transformers,torch]
                                     [--no-fixtures] [--keep-going]

For every codebase of ``common.CODEBASES`` (vLLM 0.33.0, transformers 5.17.0 and torch 2.13.0+cpu,
unpacked from their wheels by ``fetch.py``) and every fixture tree under ``tests/fixtures/``, runs,
with the engine of the git revision REV (``git archive`` of its ``flake8_importpolicy``, first on
``PYTHONPATH``) and with the working tree's engine:

- ``importpolicy check --format json --no-cache``;
- ``importpolicy why MODULE --format json --no-cache`` (the whole predicted closure) for each light
  module the policy names without wildcards.

Each pair of outputs (and exit statuses) must be byte-identical; the script prints one line per
comparison and a summary, and exits 1 on the first difference (``--keep-going``: after all). This is
what a refactoring that promises "behaviour does not change" is held to.
"""

from __future__ import annotations

import argparse
import difflib
import subprocess
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    CODEBASES,
    REPO,
    bench_env,
    cache_root,
    script,
    snapshot_engine_rev,
    write_setup,
)
from fetch import fetch_wheel_tree  # noqa: E402


def _light_modules(policy: Path) -> list[str]:
    with policy.open("rb") as handle:
        light = tomllib.load(handle).get("light", {})
    return sorted(name for name in light if "*" not in name)


def _run(argv: list[str], engine: Path | None, cwd: Path) -> tuple[int, str, str]:
    done = subprocess.run(argv, cwd=cwd, env=bench_env(engine), capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def _compare(label: str, argv: list[str], rev_engine: Path, cwd: Path) -> bool:
    before = _run(argv, rev_engine, cwd)
    after = _run(argv, None, cwd)
    same = before[:2] == after[:2]
    print(f"{'same' if same else 'DIFFERENT'}  {label}  (exit {before[0]} / {after[0]}, "
          f"{len(after[1])} bytes)", flush=True)
    if not same:
        diff = difflib.unified_diff(before[1].splitlines(), after[1].splitlines(), "revision",
                                    "working tree", lineterm="", n=2)
        print("\n".join(list(diff)[:60]))
        if before[2] != after[2]:
            print(f"stderr of the revision:\n{before[2][-1500:]}\nstderr now:\n{after[2][-1500:]}")
    return same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine-rev", required=True, metavar="REV")
    parser.add_argument("--codebases", default="vllm,transformers,torch")
    parser.add_argument("--no-fixtures", action="store_true")
    parser.add_argument("--keep-going", action="store_true")
    args = parser.parse_args(argv)
    rev_engine, note = snapshot_engine_rev(args.engine_rev)
    print(note, flush=True)
    importpolicy = script("importpolicy")
    cases: list[tuple[str, Path, Path]] = []  # (label, policy, cwd)
    for key in [k.strip() for k in args.codebases.split(",") if k.strip()]:
        codebase = CODEBASES[key]
        tree = fetch_wheel_tree(codebase.dist, codebase.version)
        setup = write_setup(cache_root() / "bench" / "same-output" / key, tree, codebase.packages,
                            codebase.light, codebase.heavy)
        cases.append((key, setup.policy, setup.work))
    if not args.no_fixtures:
        for policy in sorted((REPO / "tests" / "fixtures").glob("*/policy.toml")):
            cases.append((f"fixture {policy.parent.name}", policy, policy.parent))
    compared = different = 0
    for label, policy, cwd in cases:
        commands = [("check", ["check"])]
        commands += [(f"why {m}", ["why", m]) for m in _light_modules(policy)]
        for what, words in commands:
            compared += 1
            command = [importpolicy, *words, "--policy", str(policy), "--format", "json",
                       "--no-cache"]
            if not _compare(f"{label}: {what}", command, rev_engine, cwd):
                different += 1
                if not args.keep_going:
                    print(f"\n{different} of {compared} outputs differ")
                    return 1
    print(f"\n{compared - different} of {compared} outputs identical"
          f"{'' if not different else f'; {different} differ'}")
    return 1 if different else 0


if __name__ == "__main__":
    raise SystemExit(main())
