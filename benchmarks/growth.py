"""How the cost of ``importpolicy check`` grows: with the number of light modules, and with tree size.

Usage::

    python benchmarks/growth.py [--part lights,trees,functions] [--runs 5] [--sizes 1000,10000,50000]
                                [--large-runs 3] [--counts 1,5,20,100]
                                [--functions 1000,2000,4000,8000,20000] [--json PATH]

Part ``lights`` — vLLM 0.33.0 with generated policies of 1, 5, 20 and 100 light modules: every
first-party module of the tree (not under a heavy pattern) is listed, shuffled with a fixed seed,
and the first N become ``[light."<name>"]`` entries (so the 5 are among the 20, and so on); the
heavy set is vLLM's four of ``common.CODEBASES``. Reported: the files importpolicy parsed (the
union of the closures; counted as facts-cache entries), and the medians of ``importpolicy check``
cold (``--no-cache``), warm (answers hit) and facts-only (answers deleted before each run).

Part ``trees`` — synthetic trees of 1k, 10k and 50k modules (``synthetic.py``) whose 5 light
modules have the same closure whatever the size; ``importpolicy check`` cold / warm / facts-only,
``lint-imports`` cold / warm and ``grimp.build_graph`` cold, alternating, with peak RSS. Trees
with more than 20,000 modules get ``--large-runs`` runs instead of ``--runs`` (to bound the total
time). Like ``compare.py``, runs are fresh processes with ``PYTHONDONTWRITEBYTECODE`` removed and
the tools' bytecode pre-compiled.

Part ``functions`` — the import-time extraction of one module of N small functions (``def f_n(x):
return x``), as when a call reaches one (``functions=True``), in this process: the median CPU time
of ``--runs`` runs for each N, and its ratio to the smallest N's. Function bodies are analysed with
copy-on-write views of the module's names; when each body copied them the time grew with N squared
(20,000 functions took 13.6 s), so the ratio for 8x the functions was 35-80 instead of about 8.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import (  # noqa: E402
    CODEBASES,
    Series,
    bench_env,
    cache_root,
    count_facts,
    engine_env,
    fmt_s,
    grimp_argv,
    importpolicy_argv,
    lint_imports_argv,
    load_average,
    machine_description,
    measure,
    prewarm_bytecode,
    snapshot_engine,
    table,
    write_setup,
)
from fetch import fetch_wheel_tree  # noqa: E402
from synthetic import HEAVY, count_py, generate, light_modules  # noqa: E402


def all_modules(tree: Path, package: str) -> list[str]:
    """Every module of ``package`` under ``tree`` found by walking the directory (sorted)."""
    names = []
    for dirpath, dirnames, filenames in os.walk(tree / package):
        dirnames[:] = sorted(d for d in dirnames if d.isidentifier())
        rel = Path(dirpath).relative_to(tree).parts
        if not all(part.isidentifier() for part in rel):
            continue
        if "__init__.py" not in filenames:
            continue  # only regular packages: names that resolve without namespace portions
        for filename in filenames:
            if not filename.endswith(".py"):
                continue
            stem = filename[:-3]
            if stem == "__init__":
                names.append(".".join(rel))
            elif stem.isidentifier():
                names.append(".".join((*rel, stem)))
    return sorted(names)


def _ip_rows(setup):  # type: ignore[no-untyped-def]
    answers = setup.ip_cache / "answers"

    def drop_answers() -> None:
        shutil.rmtree(answers, ignore_errors=True)

    env = engine_env()
    return [
        ("importpolicy cold", importpolicy_argv(setup, cache=False), env, None),
        ("importpolicy warm", importpolicy_argv(setup, cache=True), env, None),
        ("importpolicy facts", importpolicy_argv(setup, cache=True), env, drop_answers),
    ]


def _alternate(rows, runs: int, cwd: Path) -> dict[str, Series]:  # type: ignore[no-untyped-def]
    for label, argv, env, before in rows:  # untimed: populate caches
        if before is not None:
            before()
        run = measure(argv, cwd=cwd, env=env)
        if run.returncode not in (0, 1):
            raise SystemExit(f"{label} failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
    series = {label: Series(label) for label, *_ in rows}
    for _ in range(runs):
        for label, argv, env, before in rows:
            if before is not None:
                before()
            series[label].runs.append(measure(argv, cwd=cwd, env=env))
    return series


def part_lights(counts: list[int], runs: int) -> tuple[str, list[dict[str, object]]]:
    cb = CODEBASES["vllm"]
    tree = fetch_wheel_tree(cb.dist, cb.version)
    heavy_names = [h for h, _ in cb.heavy]
    candidates = [m for m in all_modules(tree, "vllm")
                  if not any(m == h or m.startswith(h + ".") for h in heavy_names)]
    random.Random(20240601).shuffle(candidates)
    rows, raw = [], []
    for count in counts:
        light = [(name, "generated") for name in candidates[:count]]
        work = cache_root() / "bench" / "growth" / f"vllm-lights-{count}"
        setup = write_setup(work, tree, cb.packages, light, cb.heavy)
        shutil.rmtree(setup.ip_cache, ignore_errors=True)
        print(f"  vllm, {count} light modules ...", file=sys.stderr)
        series = _alternate(_ip_rows(setup), runs, work)
        parsed = count_facts(setup.ip_cache)
        m = {k: s.median for k, s in series.items()}
        cold_cpu = series["importpolicy cold"].cpu
        rows.append((
            count, parsed, fmt_s(m["importpolicy cold"]), fmt_s(cold_cpu),
            fmt_s(m["importpolicy warm"]), fmt_s(m["importpolicy facts"]),
            fmt_s(series["importpolicy facts"].cpu),
            f"{1000 * cold_cpu / max(parsed, 1):.1f}",
            f"{max(s.peak for s in series.values()):.0f}",
        ))
        raw.append({"lights": count, "parsed": parsed,
                    **{k: [r.wall for r in s.runs] for k, s in series.items()}})
    text = table(
        ["light modules", "files parsed", "cold s", "cold CPU s", "warm s", "facts-only s",
         "facts-only CPU s", "cold CPU ms / parsed file", "peak RSS MiB"], rows)
    return text, raw


def part_trees(sizes: list[int], runs: int, large_runs: int) -> tuple[str, list[dict[str, object]]]:
    rows, raw = [], []
    for size in sizes:
        print(f"  synthetic tree of {size} modules: generating ...", file=sys.stderr)
        tree = generate(size)
        light = [(name, "fixed-size light closure") for name in light_modules()]
        work = cache_root() / "bench" / "growth" / f"synth-{size}"
        setup = write_setup(work, tree, ("synth",), light, HEAVY)
        for stale in (setup.ip_cache, setup.li_cache, setup.grimp_cache):
            shutil.rmtree(stale, ignore_errors=True)
        with_tree = bench_env(tree)
        li_rows = [
            ("lint-imports cold", lint_imports_argv(setup, cache=False), with_tree, None),
            ("lint-imports warm", lint_imports_argv(setup, cache=True), with_tree, None),
            ("grimp cold", grimp_argv(setup, cache=False), with_tree, None),
        ]
        n = large_runs if size > 20_000 else runs
        print(f"  synthetic tree of {size} modules: {n} runs ...", file=sys.stderr)
        series = _alternate(_ip_rows(setup) + li_rows, n, work)
        parsed = count_facts(setup.ip_cache)
        m = {k: s.median for k, s in series.items()}
        ip_peak = max(series[k].peak for k in series if k.startswith("importpolicy"))
        li_peak = max(series[k].peak for k in series if k.startswith("lint-imports"))
        rows.append((
            f"{count_py(tree):,}", n, parsed,
            fmt_s(m["importpolicy cold"]), fmt_s(series["importpolicy cold"].cpu),
            fmt_s(m["importpolicy warm"]),
            fmt_s(m["importpolicy facts"]), fmt_s(m["lint-imports cold"]),
            fmt_s(series["lint-imports cold"].cpu),
            fmt_s(m["lint-imports warm"]), fmt_s(m["grimp cold"]),
            f"{m['importpolicy cold'] / m['lint-imports cold']:.3f}",
            f"{ip_peak:.0f} / {li_peak:.0f}",
        ))
        raw.append({"size": size, "runs": n, "parsed": parsed,
                    **{k: [r.wall for r in s.runs] for k, s in series.items()},
                    **{k + " peak": [r.peak_mib for r in s.runs] for k, s in series.items()}})
    text = table(
        ["modules", "runs", "files parsed", "ip cold s", "ip cold CPU s", "ip warm s",
         "ip facts-only s", "li cold s", "li cold CPU s", "li warm s", "grimp cold s",
         "ip cold / li cold",
         "peak RSS MiB ip / li"], rows)
    return text, raw


def part_functions(counts: list[int], runs: int) -> tuple[str, list[dict[str, object]]]:
    """Median CPU seconds of extracting a module of N small functions, for each N of ``counts``."""
    import statistics
    import time

    from flake8_importpolicy.analysis.extract import extract_facts
    from flake8_importpolicy.model.facts import Target

    rows, raw = [], []
    first = 0.0
    for count in counts:
        source = "".join(f"def f_{n}(x):\n    return x\n" for n in range(count)).encode()
        times = []
        for _ in range(runs):
            started = time.process_time()  # CPU time: other processes on the machine do not count
            extract_facts(source, Target.running(), functions=True)
            times.append(time.process_time() - started)
        median = statistics.median(times)
        first = first or median
        rows.append((f"{count:,}", runs, fmt_s(median), f"{median / first:.1f}",
                     f"{count / counts[0]:.0f}"))
        raw.append({"functions": count, "cpu": times})
    text = table(["functions", "runs", "CPU s (median)", "time ratio", "size ratio"], rows)
    return text, raw


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", default="lights,trees,functions")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--large-runs", type=int, default=3)
    ap.add_argument("--counts", default="1,5,20,100")
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--functions", default="1000,2000,4000,8000,20000")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--snapshot-engine", action="store_true",
                    help="run importpolicy from a snapshot of the working tree's engine")
    args = ap.parse_args(argv)
    parts = {p.strip() for p in args.part.split(",")}
    prewarm_bytecode()
    engine_note = "engine: the installed flake8_importpolicy"
    if args.snapshot_engine:
        common.ENGINE_PATH, engine_note = snapshot_engine()
    out = [f"machine: {machine_description()}", engine_note,
           f"load average before: {load_average()}", ""]
    raw: dict[str, object] = {}
    if "lights" in parts:
        text, raw["lights"] = part_lights([int(c) for c in args.counts.split(",")], args.runs)
        out += [f"### Light-module count on vLLM 0.33.0 (medians of {args.runs} runs)", "", text, ""]
    if "trees" in parts:
        text, raw["trees"] = part_trees([int(s) for s in args.sizes.split(",")], args.runs,
                                        args.large_runs)
        out += ["### Tree size, fixed light closure (synthetic trees; medians)", "", text, ""]
    if "functions" in parts:
        text, raw["functions"] = part_functions([int(c) for c in args.functions.split(",")], args.runs)
        out += ["### Functions in one module: extraction CPU time (in this process; medians)", "",
                text, ""]
    out.append(f"load average after: {load_average()}")
    print("\n".join(out))
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
