"""importpolicy vs import-linter vs grimp on real wheels, cold and warm, in one alternating run.

Usage::

    python benchmarks/compare.py [--codebases vllm,transformers,torch] [--runs 5]
                                 [--json PATH] [--flake8-overhead] [--engine-rev REV]

For each codebase (vLLM 0.33.0, transformers 5.17.0, torch 2.13.0+cpu, each unpacked from its wheel
by ``fetch.py`` — nothing is imported), a policy of 5 light modules and its equivalent import-linter
``forbidden`` contract (source_modules = the light modules, forbidden_modules = the heavy ones) are
written under ``<bench cache>/bench/compare/<codebase>/``. Then, ``--runs`` times, each of these is
run once as a fresh process, in turn (so drifts in machine load hit every row alike):

=====================  ==================================================================
row                    command
=====================  ==================================================================
python -c pass         the interpreter start-up floor (site + .pth files of this machine)
importpolicy cold      ``importpolicy check --no-cache`` (no facts, answers or interpreter cache;
                       ``--jobs`` at its default, the CPUs)
importpolicy cold -j1  the same in one process (``--jobs 1``)
importpolicy warm      ``importpolicy check`` with its cache populated (whole-answer hit)
importpolicy facts     ``importpolicy check`` with the answers cache deleted before the run:
                       every module of the closures is re-traversed from the facts cache
lint-imports cold      ``lint-imports --no-cache``
lint-imports warm      ``lint-imports --cache-dir DIR`` (populated)
grimp cold             ``grimp.build_graph(..., cache_dir=None)`` in ``python -c``
grimp warm             ``grimp.build_graph(..., cache_dir=DIR)`` (populated)
=====================  ==================================================================

With ``--engine-rev REV`` the importpolicy rows also run with the engine of the git revision REV
(``git archive`` of its ``flake8_importpolicy``, first on ``PYTHONPATH``), in a work directory and
cache of its own, alternated with the working tree's rows; the report then compares the two engines'
medians (cold and warm, working tree / REV), and gives the median of the per-run ratios too: within
one run the two engines are timed seconds apart, so load that drifts between runs moves it less.

lint-imports and grimp run with ``PYTHONPATH=<tree>``; grimp builds the same graph lint-imports
builds (same root packages, ``include_external_packages`` when a heavy module is third-party).
``PYTHONDONTWRITEBYTECODE`` is removed from every run's environment and the tools' packages are
compiled first, so no tool pays for compiling itself. Tables are printed in Markdown: medians,
min-max, peak RSS (GNU time's maximum resident set size), ratios against the targets.

Semantics differ, so the findings differ: grimp's graph has every import statement (function bodies
too) and import-linter treats source and forbidden modules as packages; importpolicy follows only
what runs at import time, including the light modules' parent packages.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import (  # noqa: E402
    CODEBASES,
    Run,
    Series,
    Setup,
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
    snapshot_engine_rev,
    table,
    write_setup,
)
from fetch import fetch_wheel_tree  # noqa: E402

TARGETS = {
    "cold": 0.30,  # importpolicy cold <= 0.3 x lint-imports cold
    "warm": 0.25,  # importpolicy warm <= 0.25 x lint-imports warm
    "peak": 200.0,  # MiB
}


ENGINE_REV: tuple[Path, str] | None = None
"""With ``--engine-rev``: (snapshot directory, revision) of the engine compared with the working tree."""


def _importpolicy_rows(
    setup: Setup, engine: dict[str, str], suffix: str = ""
) -> list[tuple[str, list[str], dict[str, str], object]]:
    answers = setup.ip_cache / "answers"

    def drop_answers() -> None:
        shutil.rmtree(answers, ignore_errors=True)

    return [
        (f"importpolicy cold{suffix}", importpolicy_argv(setup, cache=False), engine, None),
        (f"importpolicy cold -j1{suffix}", importpolicy_argv(setup, cache=False) + ["--jobs", "1"],
         engine, None),
        (f"importpolicy warm{suffix}", importpolicy_argv(setup, cache=True), engine, None),
        (f"importpolicy facts{suffix}", importpolicy_argv(setup, cache=True), engine, drop_answers),
    ]


def _rows(setup: Setup, rev_setup: Setup | None) -> list[tuple[str, list[str], dict[str, str], object]]:
    """(label, argv, env, before-hook) of every row, in the order they alternate."""
    plain = bench_env()
    with_tree = bench_env(setup.tree)
    rev_rows = []
    if rev_setup is not None and ENGINE_REV is not None:
        rev_rows = _importpolicy_rows(rev_setup, bench_env(ENGINE_REV[0]), f" [{ENGINE_REV[1]}]")
    return [
        ("python -c pass", [sys.executable, "-c", "pass"], plain, None),
        *_importpolicy_rows(setup, engine_env()),
        *rev_rows,
        ("lint-imports cold", lint_imports_argv(setup, cache=False), with_tree, None),
        ("lint-imports warm", lint_imports_argv(setup, cache=True), with_tree, None),
        ("grimp cold", grimp_argv(setup, cache=False), with_tree, None),
        ("grimp warm", grimp_argv(setup, cache=True), with_tree, None),
    ]


def _ip_violations(stdout: str) -> str:
    try:
        data = json.loads(stdout)
    except ValueError:
        return "?"
    return f"{len(data.get('violations', []))} violations, {len(data.get('problems', []))} problems"


def _require_report(label: str, run: Run) -> None:
    """Stop the benchmark when an importpolicy row printed no JSON report: an engine that cannot
    even be imported (a broken install, a bad ``PYTHONPATH``) also exits 1, like a check with
    findings, and its interpreter start-up would be timed as a check."""
    if label.startswith("importpolicy") and _ip_violations(run.stdout) == "?":
        raise SystemExit(f"{label} printed no report (exit {run.returncode}):\n{run.stderr[-2000:]}")


def _li_summary(stdout: str) -> str:
    match = re.search(r"Contracts: (\d+) kept, (\d+) broken", stdout)
    chains = len(re.findall(r"^\S+ is not allowed to import \S+:$", stdout, re.M))
    if not match:
        return "?"
    return f"{match.group(1)} kept, {match.group(2)} broken ({chains} forbidden pairs)"


def bench_codebase(key: str, runs: int) -> dict[str, object]:
    cb = CODEBASES[key]
    tree = fetch_wheel_tree(cb.dist, cb.version)
    work = cache_root() / "bench" / "compare" / key
    setup = write_setup(work, tree, cb.packages, cb.light, cb.heavy)
    rev_setup = None
    if ENGINE_REV is not None:
        rev_setup = write_setup(work / "engine-rev", tree, cb.packages, cb.light, cb.heavy)
        shutil.rmtree(rev_setup.ip_cache, ignore_errors=True)
    for stale in (setup.ip_cache, setup.li_cache, setup.grimp_cache):
        shutil.rmtree(stale, ignore_errors=True)
    rows = _rows(setup, rev_setup)
    print(f"\n## {key} {cb.version}  ({sum(1 for _ in tree.rglob('*.py'))} .py files)",
          file=sys.stderr)

    # Untimed: populate every cache, write any missing bytecode, and record what each tool found.
    notes: dict[str, str] = {}
    for label, argv, env, before in rows:
        if before is not None:
            before()
        run = measure(argv, cwd=setup.work, env=env)
        if label == "importpolicy cold" or label == "lint-imports cold":
            if run.returncode not in (0, 1):
                raise SystemExit(f"{label} failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
        _require_report(label, run)
        if label == "importpolicy cold":
            notes["importpolicy"] = _ip_violations(run.stdout)
        elif label == "lint-imports cold":
            notes["lint-imports"] = _li_summary(run.stdout)
        elif label == "grimp cold":
            notes["grimp modules"] = run.stdout.strip()
        if label == "importpolicy warm":
            notes["files parsed by importpolicy"] = str(count_facts(setup.ip_cache))

    series = {label: Series(label) for label, *_ in rows}
    outputs: dict[str, set[str]] = {}
    for number in range(runs):
        for label, argv, env, before in rows:
            if before is not None:
                before()
            run = measure(argv, cwd=setup.work, env=env)
            series[label].runs.append(run)
            _require_report(label, run)
            if label.startswith("importpolicy"):
                outputs.setdefault(label, set()).add(run.stdout.replace(str(work / "engine-rev"),
                                                                        str(work)))
        print(f"  run {number + 1}/{runs}: " + ", ".join(
            f"{label.replace('importpolicy', 'ip').replace('lint-imports', 'li')}"
            f"={s.runs[-1].wall:.2f}"
            for label, s in series.items()), file=sys.stderr)

    distinct = {out for seen in outputs.values() for out in seen}
    notes["importpolicy output identical cold/warm/facts"] = (
        "yes" if len(distinct) == 1 else
        "NO: " + "; ".join(f"{label}: {_ip_violations(next(iter(seen)))}"
                           for label, seen in outputs.items()))
    return {
        "key": key, "version": cb.version, "tree": str(tree), "work": str(setup.work),
        "py_files": sum(1 for _ in tree.rglob("*.py")),
        "light": [n for n, _ in cb.light], "heavy": [n for n, _ in cb.heavy],
        "notes": notes,
        "series": {
            label: {"walls": [r.wall for r in s.runs], "peaks": [r.peak_mib for r in s.runs],
                    "exits": [r.returncode for r in s.runs]}
            for label, s in series.items()
        },
        "_series": series,
    }


def report(results: list[dict[str, object]], runs: int) -> str:
    out: list[str] = []
    summary_rows = []
    for res in results:
        series: dict[str, Series] = res["_series"]  # type: ignore[assignment]
        out.append(f"### {res['key']} {res['version']} ({res['py_files']} .py files)\n")
        out.append(f"light: {', '.join(res['light'])}; heavy: {', '.join(res['heavy'])}  ")
        out.append("; ".join(f"{k}: {v}" for k, v in res["notes"].items()) + "\n")  # type: ignore
        out.append(table(
            ["row", f"median wall s ({runs} runs)", "min-max s", "median CPU s", "peak RSS MiB",
             "exit"],
            [(s.label, fmt_s(s.median), f"{fmt_s(s.spread[0])}-{fmt_s(s.spread[1])}",
              fmt_s(s.cpu), f"{s.peak:.0f}", s.exits) for s in series.values()],
        ))
        out.append("")
        m = {label: s.median for label, s in series.items()}
        peak = max(series[k].peak for k in ("importpolicy cold", "importpolicy warm",
                                            "importpolicy facts"))
        cold = m["importpolicy cold"] / m["lint-imports cold"]
        serial = m["importpolicy cold -j1"] / m["lint-imports cold"]
        warm = m["importpolicy warm"] / m["lint-imports warm"]
        facts = m["importpolicy facts"] / m["lint-imports warm"]
        summary_rows.append((
            res["key"],
            f"{cold:.2f} {'ok' if cold <= TARGETS['cold'] else 'MISSED'}",
            f"{serial:.2f}",
            f"{warm:.2f} {'ok' if warm <= TARGETS['warm'] else 'MISSED'}",
            f"{facts:.2f} {'ok' if facts <= TARGETS['warm'] else 'MISSED'}",
            f"{m['importpolicy cold'] / m['grimp cold']:.2f}",
            f"{m['importpolicy warm'] / m['grimp warm']:.2f}",
            f"{peak:.0f} {'ok' if peak <= TARGETS['peak'] else 'MISSED'}",
        ))
    if ENGINE_REV is not None:
        out.append(f"### This engine against revision {ENGINE_REV[1]} (medians, working tree / revision)\n")
        rev_rows = []
        for res in results:
            series = res["_series"]  # type: ignore[assignment]
            m = {label: s.median for label, s in series.items()}
            tag = f" [{ENGINE_REV[1]}]"
            labels = ("importpolicy cold", "importpolicy cold -j1", "importpolicy warm",
                      "importpolicy facts")
            rev_rows.append((res["key"], *(
                f"{m[label]:.3f} / {m[label + tag]:.3f} = {m[label] / m[label + tag]:.2f}"
                for label in labels)))
            # Each run times both engines seconds apart, so the ratio within a run is less moved
            # by the machine's load drifting between runs than the ratio of the two medians.
            paired = [
                statistics.median(mine.wall / theirs.wall for mine, theirs
                                  in zip(series[label].runs, series[label + tag].runs))
                for label in labels
            ]
            rev_rows.append((f"{res['key']} (median of per-run ratios)",
                             *(f"{ratio:.2f}" for ratio in paired)))
        out.append(table(["codebase", "cold", "cold -j1", "warm", "facts"], rev_rows))
        out.append("")
    out.append("### Ratios (medians) against the targets\n")
    out.append(table(
        ["codebase", "ip cold / li cold (<= 0.30)", "ip cold -j1 / li cold",
         "ip warm / li warm (<= 0.25)",
         "ip facts / li warm (<= 0.25)", "ip cold / grimp cold", "ip warm / grimp warm",
         "ip peak RSS MiB (<= 200)"],
        summary_rows,
    ))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codebases", default="vllm,transformers,torch")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", metavar="PATH", help="also write the raw measurements here")
    ap.add_argument("--snapshot-engine", action="store_true",
                    help="run importpolicy from a snapshot of the working tree's engine (for runs "
                         "while the engine is being edited)")
    ap.add_argument("--engine-rev", metavar="REV",
                    help="also run the engine of this git revision, alternated with the working tree's")
    ap.add_argument("--flake8-overhead", action="store_true",
                    help="afterwards run benchmarks/flake8_overhead.py if it exists")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.codebases.split(",") if k.strip()]
    unknown = [k for k in keys if k not in CODEBASES]
    if unknown:
        ap.error(f"unknown codebase(s) {unknown}; choose from {sorted(CODEBASES)}")

    prewarm_bytecode()
    engine_note = "engine: the installed flake8_importpolicy"
    if args.snapshot_engine:
        common.ENGINE_PATH, engine_note = snapshot_engine()
    if args.engine_rev:
        global ENGINE_REV
        root, note = snapshot_engine_rev(args.engine_rev)
        ENGINE_REV = (root, args.engine_rev)
        engine_note += f"; compared with the {note}"
    print(f"machine: {machine_description()}", file=sys.stderr)
    print(engine_note, file=sys.stderr)
    load_before = load_average()
    results = [bench_codebase(key, args.runs) for key in keys]
    print(f"machine: {machine_description()}")
    print(engine_note)
    print(f"load average (1/5/15 min) before: {load_before}; after: {load_average()}\n")
    print(report(results, args.runs))
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{k: v for k, v in r.items() if k != "_series"} for r in results], indent=1))
    if args.flake8_overhead:
        script = Path(__file__).resolve().parent / "flake8_overhead.py"
        if script.is_file():
            print("\n### flake8 per-file overhead (benchmarks/flake8_overhead.py)\n", flush=True)
            subprocess.run([sys.executable, str(script)], check=False)
        else:
            print("\n(benchmarks/flake8_overhead.py not present: flake8 overhead not measured)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
