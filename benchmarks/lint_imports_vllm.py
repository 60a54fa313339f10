"""Comparison run: import-linter's ``lint-imports`` on vLLM 0.33.0.

Usage::

    python benchmarks/lint_imports_vllm.py [--repeat 3] [--trees pristine,seeded]
                                           [--exclude-type-checking]

Installs nothing: it assumes ``lint-imports`` (PyPI package ``import-linter``)
is on PATH. It writes an ``.importlinter`` file with one ``forbidden``
contract equivalent to the light/heavy policy of ``vllm_seed.py``
(source_modules = the three light modules, forbidden_modules = the four heavy
ones, indirect imports checked, the import-linter default) into a directory
beside the unpacked tree, then runs it with ``PYTHONPATH=<tree>`` so that
``vllm`` is importable as the root package.

Each tree is timed cold (``--no-cache``) and warm (``--cache-dir`` under the
benchmark cache, populated by one untimed run first); the median wall time and
peak RSS of ``--repeat`` runs are printed.

Note the semantic difference: import-linter's graph (grimp) holds every import
statement in a file, including those inside function bodies, so it reports
chains that never run at import time. ``importpolicy`` only follows imports
that execute when the module is imported.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Run, bench_env, measure, prewarm_bytecode, script  # noqa: E402
from fetch import cache_root, fetch_wheel_tree, seeded_copy  # noqa: E402
from vllm_seed import NAME, VERSION, seed_edit  # noqa: E402

LIGHT = ["vllm.models.common.ops", "vllm.envs", "vllm.logger"]
HEAVY = ["vllm.config", "vllm.compilation", "vllm.lora", "vllm.multimodal"]


def importlinter_config(exclude_type_checking: bool) -> str:
    lines = [
        "[importlinter]",
        "root_package = vllm",
    ]
    if exclude_type_checking:
        lines.append("exclude_type_checking_imports = True")
    lines += [
        "",
        "[importlinter:contract:light-stays-light]",
        "name = Light vLLM modules must not import heavy ones",
        "type = forbidden",
        "source_modules =",
        *(f"    {m}" for m in LIGHT),
        "forbidden_modules =",
        *(f"    {m}" for m in HEAVY),
        "",
    ]
    return "\n".join(lines)


def run_once(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[Run, float, float]:
    """Run under GNU time (if present, :func:`common.measure`); return (run, wall s, peak RSS MiB)."""
    run = measure(argv, cwd=cwd, env=env)
    return run, run.wall, run.peak_mib


def bench_tree(label: str, tree: Path, repeat: int, exclude_tc: bool, lint_imports: str) -> None:
    suffix = "-no-tc" if exclude_tc else ""
    work = cache_root() / "lint-imports" / f"{tree.name}{suffix}"
    work.mkdir(parents=True, exist_ok=True)
    config = work / ".importlinter"
    config.write_text(importlinter_config(exclude_tc))
    cache_dir = work / "cache"
    env = bench_env(tree)  # without PYTHONDONTWRITEBYTECODE, like every benchmark
    base = [lint_imports, str(config), "--no-logo"]

    print(f"\n===== {label}: {tree}")
    print(f"config: {config}")

    cold_walls, cold_peaks = [], []
    proc = None
    for _ in range(repeat):
        proc, wall, peak = run_once(base + ["--no-cache"], work, env)
        cold_walls.append(wall)
        cold_peaks.append(peak)

    if cache_dir.exists():
        shutil.rmtree(cache_dir)
    run_once(base + ["--cache-dir", str(cache_dir)], work, env)  # populate cache
    warm_walls, warm_peaks = [], []
    for _ in range(repeat):
        warm_proc, wall, peak = run_once(base + ["--cache-dir", str(cache_dir)], work, env)
        warm_walls.append(wall)
        warm_peaks.append(peak)

    assert proc is not None
    print(f"--- lint-imports output (exit {proc.returncode}):")
    sys.stdout.write(proc.stdout)
    if proc.stderr.strip():
        sys.stdout.write("--- stderr ---\n" + proc.stderr)
    if warm_proc.returncode != proc.returncode:
        print(f"!!! warm run exit {warm_proc.returncode} differs from cold exit {proc.returncode}")
    for name, walls, peaks in (
        ("cold (--no-cache)", cold_walls, cold_peaks),
        ("warm (--cache-dir)", warm_walls, warm_peaks),
    ):
        runs = ", ".join(f"{w:.2f}" for w in walls)
        print(f"{name}: median wall {statistics.median(walls):.2f} s [{runs}], "
              f"median peak RSS {statistics.median(peaks):.0f} MiB")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trees", default="pristine,seeded", help="comma-separated: pristine, seeded")
    ap.add_argument("--exclude-type-checking", action="store_true",
                    help="set exclude_type_checking_imports = True "
                         "(closer to import-time semantics)")
    ap.add_argument("--lint-imports", default="lint-imports", help="lint-imports executable")
    args = ap.parse_args(argv)

    # Prefer the script next to this interpreter: a pyenv shim on PATH adds ~0.1 s per run.
    exe = script(args.lint_imports) if args.lint_imports == "lint-imports" else None
    exe = exe or shutil.which(args.lint_imports)
    if exe is None:
        print(f"{args.lint_imports!r} not found; install the 'import-linter' package first",
              file=sys.stderr)
        return 2
    prewarm_bytecode()
    ver = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"lint-imports: {exe} ({ver})")

    pristine = fetch_wheel_tree(NAME, VERSION)
    trees = {"pristine": pristine}
    wanted = [t.strip() for t in args.trees.split(",") if t.strip()]
    if "seeded" in wanted:
        trees["seeded"] = seeded_copy(pristine, f"{NAME}-{VERSION}-seed-ops-reexport", seed_edit)
    for label in wanted:
        if label not in trees:
            print(f"unknown tree {label!r}", file=sys.stderr)
            return 2
        bench_tree(label, trees[label], args.repeat, args.exclude_type_checking, exe)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
