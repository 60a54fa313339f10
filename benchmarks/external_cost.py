"""What following third-party code costs: ``external = "stop"`` against ``"auto"`` and ``"follow"``.

Usage::

    python benchmarks/external_cost.py [--runs 7] [--interpreter PYTHON]

vLLM 0.33.0 (unpacked from its wheel by ``fetch.py``; never imported) is checked with the five light
modules of ``compare.py`` and two heavy modules: ``torch`` (third-party, so ``external = "auto"``
follows third-party code) and ``vllm.config`` (first-party). The interpreter whose ``sys.path``
locates the installed packages is the venv of ``differential.py`` (transformers, pydantic, numpy,
requests, ... installed; made once under the bench cache), or ``--interpreter``. For each setting,
``importpolicy check --no-cache`` runs ``--runs`` times, the settings alternating; the table gives
the median wall time, the files parsed (facts entries of one run with a fresh cache) and what the
check reports. Nothing is written into the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    Series,
    count_facts,
    fmt_s,
    fresh_dir,
    load_average,
    machine_description,
    measure,
    script,
    table,
)
from differential import REQUIREMENTS, venv_python  # noqa: E402
from fetch import cache_root, fetch_wheel_tree  # noqa: E402

LIGHT = ("vllm.models.common.ops", "vllm.envs", "vllm.logger", "vllm.entrypoints.cli.main",
         "vllm.sampling_params")
HEAVY = (("torch", "initialises CUDA state and takes seconds to import"),
         ("vllm.config", "pulls in the model registry"))
SETTINGS = ("stop", "auto", "follow")


def write_policy(directory: Path, tree: Path, external: str, interpreter: str) -> Path:
    lines = [
        "[settings]",
        f"source-roots = [{json.dumps(str(tree))}]",
        f"interpreter = {json.dumps(interpreter)}",
        f'external = "{external}"',
        "",
        "[heavy]",
        *(f'"{name}" = "{reason}"' for name, reason in HEAVY),
        "",
    ]
    for name in LIGHT:
        lines += [f'[light."{name}"]', 'reason = "imported before the engine forks"', ""]
    path = fresh_dir(directory) / "policy.toml"
    path.write_text("\n".join(lines))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--interpreter", help="default: the venv of benchmarks/differential.py")
    args = parser.parse_args(argv)
    tree = fetch_wheel_tree("vllm", "0.33.0")
    interpreter = args.interpreter or str(venv_python(REQUIREMENTS, sys.executable))
    work = cache_root() / "bench" / "external"
    policies = {ext: write_policy(work / ext, tree, ext, interpreter) for ext in SETTINGS}
    importpolicy = script("importpolicy")
    series = {ext: Series(ext) for ext in SETTINGS}
    findings: dict[str, str] = {}
    for number in range(args.runs):
        for ext in SETTINGS:
            run = measure([importpolicy, "check", "--no-cache", "--policy", str(policies[ext])],
                          cwd=policies[ext].parent, env=dict(__import__("os").environ))
            series[ext].runs.append(run)
            findings[ext] = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr
        print(f"run {number + 1}/{args.runs}: " + ", ".join(
            f"{ext}={series[ext].runs[-1].wall:.2f}" for ext in SETTINGS), file=sys.stderr)
    parsed = {}
    for ext in SETTINGS:  # one run with a fresh cache counts the files parsed
        cache = policies[ext].parent / ".importpolicy_cache"
        measure([importpolicy, "check", "--policy", str(policies[ext])], cwd=policies[ext].parent,
                env=dict(__import__("os").environ))
        parsed[ext] = count_facts(cache)
    stop = series["stop"].median
    print(f"machine: {machine_description()}")
    print(f"load average after: {load_average()}; interpreter: {interpreter}\n")
    print(table(
        ["external", f"median wall s ({args.runs} runs)", "vs stop", "files parsed", "report"],
        [(ext, fmt_s(series[ext].median), f"{series[ext].median / stop:.2f}", parsed[ext],
          findings[ext]) for ext in SETTINGS],
    ))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
