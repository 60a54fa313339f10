"""Checking vLLM 0.33.0 in a real environment: torch, transformers and numpy installed (issue 26).

Usage::

    env -u PYTHONDONTWRITEBYTECODE nice -n 10 python benchmarks/real_env.py [--runs 7]
        [--snapshot-engine | --engine-rev REV] [--json FILE] [--only hit,flake8]

What it builds, once, outside the repository (under ``<bench cache>/real_env/``, the bench cache
being ``$IMPORTPOLICY_BENCH_CACHE`` or ``~/.cache/flake8-importpolicy``):

- a venv with :data:`PINS` (torch's CPU wheel: ``pip install torch==2.13.0`` alone first, which takes
  the file on this machine's disk; a CUDA build, or any ``nvidia-*`` package, makes the build fail);
- vLLM 0.33.0's source, the wheel unpacked by ``fetch.py`` (never imported, never installed), as two
  projects: ``project-a`` (hard links of the tree; a file about to be edited is unlinked first, so the
  fetched tree is never touched) and ``project-b``, the same tree elsewhere (its own paths, its own
  project cache), each with the same ``policy.toml``: ``[settings] interpreter`` = the venv's
  python, ``external = "auto"`` (the default), so torch's and transformers' own code is followed.

The policy (:data:`LIGHT`, :data:`HEAVY`). The light modules are two that vLLM's engine process
imports before it starts its workers, and that *must* import torch, so the question is not whether
they reach torch but what torch and transformers then run at import time: whether the compiler's
back end (``torch._inductor``, seconds to import, sympy and code generation) or transformers'
model zoo (``transformers.models``) comes with them. Only torch's and transformers' own code can
answer that, which is why the interpreter is the venv's and every closure runs through
``torch/__init__.py`` (about 700 files of torch) and through ``vllm/__init__.py``:

- ``vllm.model_executor.model_loader``: the weight loaders, the light module with the widest
  third-party closure of those vLLM imports before forking (torch, transformers' configuration
  and hub code, safetensors' and numpy's);
- ``vllm.v1.worker.gpu_worker``: the worker's entry, whose first-party closure is the largest of
  vLLM's light candidates (the model runner, the attention back ends' selectors, the KV cache),
  so that first-party parsing weighs in the cold numbers beside torch's.

``vllm.model_executor.models`` (first-party, every model family) is the third heavy pattern.

What it measures, ``--runs`` rounds, the rows alternating within each round (fresh processes; wall
time around ``subprocess.run``, CPU time (user + system) and peak RSS from GNU time):

- **floor**: read and ``ast.parse`` every file a cold check parses (the list comes from one
  in-process check before the rounds), one after the other in one fresh process;
- **cold**: project A with its cache deleted and an empty user-level cache
  (``IMPORTPOLICY_CACHE_DIR`` set to a directory emptied before the run): every cache empty;
- **answer hit**: project A again, nothing changed (the answer cache answers);
- **facts-warm after an edit**: one line of :data:`EDITED` (first-party, in both closures) rewritten
  (a different value each time), then project A: that file is parsed again, every other file's
  facts come from the caches;
- **second project**: project B with its project cache deleted and the user-level cache that the
  cold run filled: first-party files parsed again, installed files' facts from the user-level cache;
- **flake8 stdin**: ``flake8 - --stdin-display-name FILE --select IPL`` in project A with
  :data:`FLAKE8_FILE` on stdin as on disk, as an editor calls it on a saved buffer (after one untimed
  warm-up per round, which the edit made necessary); beside it, not a target, the same with
  ``--select F`` (flake8 and the plugin's import, no check) and with an unsaved one-line edit.

Every check's report (``importpolicy check``'s text, as a user or CI reads it; ``--format json``
adds about 0.2 s of CPU to an answer hit here, its indented encoding being the standard library's
Python encoder) must be the same (project B's paths mapped to project A's): a cache that
changed an answer stops the run. The table gives medians, the ratios to cold for each criterion
(wall and CPU), its target and PASS/FAIL; the ratio targets are judged on wall time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import (  # noqa: E402
    Run,
    Series,
    fmt_s,
    load_average,
    machine_description,
    measure,
    prewarm_bytecode,
    script,
    snapshot_engine,
    snapshot_engine_rev,
    table,
)
from fetch import MARKER, build_once, cache_root, fetch_wheel_tree  # noqa: E402
from parse_floor import PARSE_ALL  # noqa: E402  (the floor measured as parse_floor.py does)

PINS = ("torch==2.13.0", "transformers==5.24.0", "numpy==2.4.6")
VENV_MARKER = ".real-env-venv-complete"

LIGHT = (
    ("vllm.model_executor.model_loader", "imported by the engine process before it starts workers"),
    ("vllm.v1.worker.gpu_worker", "the worker's entry: must not compile before it forks"),
)
HEAVY = (
    ("torch._inductor", "the compiler back end: seconds to import, sympy and code generation"),
    ("transformers.models", "every model family of transformers"),
    ("vllm.model_executor.models", "every model family of vLLM"),
)
EDITED = "vllm/model_executor/model_loader/__init__.py"
"""The first-party file whose last line the facts-warm row rewrites (in both light closures)."""
FLAKE8_FILE = EDITED
EDIT_MARK = "_IMPORTPOLICY_BENCH_EDIT = "

TARGETS = {
    "cold / floor": 1.3,
    "second project / cold": 0.15,
    "facts-warm after an edit / cold": 0.1,
    "answer hit s": 0.1,
    "flake8 stdin ms": 150.0,
    "peak RSS MB": 500.0,
}


def real_env_root() -> Path:
    root = cache_root() / "real_env"
    root.mkdir(parents=True, exist_ok=True)
    return root


def venv_python(base_python: str = sys.executable) -> Path:
    """The venv holding :data:`PINS` (made once, keyed by the pins; a half-made one is made again).

    torch is asked for at its exact version first and alone, so pip takes the CPU wheel on this
    machine's disk and never resolves a CUDA build for another package's range."""
    digest = hashlib.sha256("\n".join(PINS).encode()).hexdigest()[:12]
    venv = real_env_root() / f"venv-{digest}"
    python = venv / "bin" / "python"
    if (venv / VENV_MARKER).is_file():
        return python
    if venv.exists():
        shutil.rmtree(venv)
    print(f"[real_env] making {venv}: pip install {' '.join(PINS)}", file=sys.stderr)
    subprocess.run([base_python, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    pip = [str(python), "-m", "pip", "install", "-q", "--only-binary=:all:"]
    subprocess.run(pip + [PINS[0]], check=True, env=env)
    subprocess.run(pip + list(PINS), check=True, env=env)
    freeze = subprocess.run([str(python), "-m", "pip", "freeze", "--all"], check=True,
                            capture_output=True, text=True, env=env).stdout
    torch_line = next((line for line in freeze.splitlines() if line.startswith("torch==")), "")
    if "+cpu" not in torch_line or any(line.startswith("nvidia-") for line in freeze.splitlines()):
        shutil.rmtree(venv)
        raise SystemExit(f"[real_env] {venv}: not the CPU build of torch ({torch_line!r}); removed")
    (venv / VENV_MARKER).write_text(freeze)
    return python


def policy_text(interpreter: Path) -> str:
    return common.render_policy(
        LIGHT, HEAVY, header="Generated by benchmarks/real_env.py: vLLM 0.33.0 against an installed torch.",
        interpreter=str(interpreter), external="auto", cache_dir=".importpolicy_cache")


def make_project(name: str, policy: str, *, link: bool) -> Path:
    """A copy of vLLM's tree with ``policy.toml`` (hard links with ``link``; the edited file is
    always a copy of its own). Made again when the policy changed."""
    dest = real_env_root() / name
    if (dest / MARKER).is_file() and (dest / "policy.toml").read_text() != policy:
        shutil.rmtree(dest)
    source = fetch_wheel_tree("vllm", "0.33.0")

    def hard_link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    def build(tmp: Path) -> str:
        shutil.copytree(source, tmp, copy_function=hard_link if link else shutil.copy2,
                        ignore=shutil.ignore_patterns(MARKER, "__pycache__", ".importpolicy_cache",
                                                      "policy.toml"))
        edited = tmp / EDITED
        text = edited.read_bytes()
        edited.unlink()
        edited.write_bytes(text)
        (tmp / "policy.toml").write_text(policy)
        return f"{'hard-linked' if link else 'copied'} from {source}\n"

    return build_once(dest, build)


def edit_once(project: Path) -> None:
    """Rewrite the last line of :data:`EDITED` to a value it never had (one line changes)."""
    path = project / EDITED
    lines = path.read_text().splitlines(keepends=True)
    if lines and lines[-1].startswith(EDIT_MARK):
        lines.pop()
    lines.append(f"{EDIT_MARK}{time.time_ns()}\n")
    path.write_text("".join(lines))


def empty(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def closure_files(policy: Path, user_cache: Path) -> list[str]:
    """The source files a cold check of ``policy`` parses (first-party and installed), from one
    in-process check with empty caches."""
    os.environ["IMPORTPOLICY_CACHE_DIR"] = str(user_cache)
    from flake8_importpolicy.analysis.engine import PolicyEngine
    from flake8_importpolicy.config.load import load_policy

    with PolicyEngine(load_policy(policy), jobs=1) as engine:
        engine.check()
        files, _ = engine.find_dependencies()
    return sorted(str(path) for path, digest in files.items() if digest)


def normalised(run: Run, project: Path, reference: Path) -> str:
    if run.returncode not in (0, 1):
        raise SystemExit(f"check failed ({run.returncode}) in {project}:\n{run.stdout}{run.stderr}")
    return run.stdout.replace(str(project), str(reference))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="rounds (default 7; medians)")
    engine_group = parser.add_mutually_exclusive_group()
    engine_group.add_argument("--snapshot-engine", action="store_true",
                              help="run a copy of the working tree's engine (see common.py)")
    engine_group.add_argument("--engine-rev", metavar="REV", help="run the engine of a revision")
    parser.add_argument("--json", metavar="FILE", help="also write the runs as JSON")
    parser.add_argument("--only", metavar="ROWS", type=lambda text: set(text.split(",")),
                        help="hit,flake8: only the answer hit and the warm flake8 rows (with their "
                             "floors), after one untimed cold check that gives the reference report")
    args = parser.parse_args(argv)
    only = args.only or set()
    if only - {"hit", "flake8"}:
        parser.error(f"--only: unknown rows {sorted(only - {'hit', 'flake8'})}; hit, flake8")

    described = "the installed engine (git working tree)"
    if args.snapshot_engine:
        common.ENGINE_PATH, described = snapshot_engine()
    elif args.engine_rev:
        common.ENGINE_PATH, described = snapshot_engine_rev(args.engine_rev)
    prewarm_bytecode()
    python = venv_python()
    policy = policy_text(python)
    a = make_project("project-a", policy, link=True)
    b = make_project("project-b", policy, link=False)
    user_cold = real_env_root() / "user-cache"
    base_env = common.engine_env()
    env = dict(base_env, IMPORTPOLICY_CACHE_DIR=str(user_cold))

    print(f"load average before: {load_average()}; {described}", file=sys.stderr)
    empty(user_cold)
    empty(a / ".importpolicy_cache")
    started = time.perf_counter()
    if common.ENGINE_PATH is not None:
        sys.path.insert(0, str(common.ENGINE_PATH))
    engine_dir = (common.ENGINE_PATH or common.REPO) / "flake8_importpolicy"
    digest = hashlib.sha256(policy.encode())
    for source in sorted(engine_dir.rglob("*.py")):
        digest.update(source.read_bytes())
    listing = real_env_root() / f"closure-{digest.hexdigest()[:12]}.json"  # per engine and policy
    if listing.is_file():
        paths = json.loads(listing.read_text())
    elif only:
        paths = []  # the floor and the cold rows are not run
    else:
        paths = closure_files(a / "policy.toml", user_cold)
        listing.write_text(json.dumps(paths))
    first_party = sum(1 for p in paths if p.startswith(str(a) + os.sep))
    print(f"[real_env] {len(paths)} files parsed ({first_party} first-party), listed in "
          f"{time.perf_counter() - started:.1f} s", file=sys.stderr)

    check = [script("importpolicy"), "check"]  # the text report, as a user or CI reads it
    flake8 = [sys.executable, "-m", "flake8", "-", "--stdin-display-name", FLAKE8_FILE]
    labels: tuple[str, ...] = (
        "floor", "cold", "answer hit", "facts-warm after an edit", "second project",
        "flake8 stdin", "flake8 stdin --select F", "flake8 stdin, unsaved edit", "python -c pass")
    if only:
        labels = tuple(label for label in labels if label == "python -c pass"
                       or ("hit" in only and label == "answer hit")
                       or ("flake8" in only and label in ("flake8 stdin", "flake8 stdin --select F")))
    series = {label: Series(label) for label in labels}
    reference: Optional[str] = None

    def same(run: Run, project: Path, label: str) -> None:
        nonlocal reference
        out = normalised(run, project, a)
        if reference is None:
            reference = out
        elif out != reference:
            raise SystemExit(f"{label}: the output differs from the cold run's:\n{out}\n---\n"
                             f"{reference}")

    def flake8_rows(number: int, *, with_edit: bool) -> None:
        buffer = (a / FLAKE8_FILE).read_text()
        measure(flake8 + ["--select", "IPL"], cwd=a, env=env, stdin=buffer)  # warm-up
        rows = [("flake8 stdin", "IPL", buffer), ("flake8 stdin --select F", "F", buffer)]
        if with_edit:
            rows.append(("flake8 stdin, unsaved edit", "IPL", buffer + f"{EDIT_MARK}{number}\n"))
        for label, select, text in rows:
            run = measure(flake8 + ["--select", select], cwd=a, env=env, stdin=text)
            if run.returncode not in (0, 1) or run.stderr.strip():
                raise SystemExit(f"{label} failed ({run.returncode}):\n{run.stdout}{run.stderr}")
            series[label].runs.append(run)

    # One untimed round: bytecode, the OS's file cache.
    if only:  # the reference report comes from a cold check, which fills the caches
        empty(a / ".importpolicy_cache")
        empty(user_cold)
        same(measure(check, cwd=a, env=env), a, "cold (untimed)")
        for number in range(args.runs):
            if "hit" in only:
                run = measure(check, cwd=a, env=env)
                same(run, a, "answer hit")
                series["answer hit"].runs.append(run)
            if "flake8" in only:
                flake8_rows(number, with_edit=False)
            series["python -c pass"].runs.append(
                measure([sys.executable, "-c", "pass"], cwd=a, env=env))
            print(f"round {number + 1}/{args.runs}: " + ", ".join(
                f"{label}={series[label].runs[-1].wall:.3f}" for label in labels)
                + f"; load {load_average()}", file=sys.stderr)
        return report_only(args, series, described, python)
    measure([sys.executable, "-c", PARSE_ALL, str(listing)], cwd=a, env=base_env)
    measure(check, cwd=a, env=env)
    for number in range(args.runs):
        series["floor"].runs.append(
            measure([sys.executable, "-c", PARSE_ALL, str(listing)], cwd=a, env=base_env))
        empty(a / ".importpolicy_cache")
        empty(user_cold)
        run = measure(check, cwd=a, env=env)
        same(run, a, "cold")
        series["cold"].runs.append(run)
        run = measure(check, cwd=a, env=env)
        same(run, a, "answer hit")
        series["answer hit"].runs.append(run)
        edit_once(a)
        run = measure(check, cwd=a, env=env)
        same(run, a, "facts-warm after an edit")
        series["facts-warm after an edit"].runs.append(run)
        empty(b / ".importpolicy_cache")
        run = measure(check, cwd=b, env=env)
        same(run, b, "second project")
        series["second project"].runs.append(run)
        flake8_rows(number, with_edit=True)
        # The interpreter's own start (site included), beside the answer hit: not a target.
        series["python -c pass"].runs.append(measure([sys.executable, "-c", "pass"], cwd=a, env=env))
        print(f"round {number + 1}/{args.runs}: " + ", ".join(
            f"{label}={series[label].runs[-1].wall:.2f}" for label in labels)
            + f"; load {load_average()}", file=sys.stderr)

    cold, cold_cpu = series["cold"].median, series["cold"].cpu
    peak = max(s.peak for label, s in series.items() if not label.startswith("flake8")
               and label != "floor")

    def ratio_row(name: str, label: str, base: str) -> list[object]:
        wall = series[label].median / series[base].median
        cpu = series[label].cpu / series[base].cpu
        return [name, f"{wall:.3f}", f"{cpu:.3f}", f"<= {TARGETS[name]}",
                "PASS" if wall <= TARGETS[name] else "FAIL"]

    answer = series["answer hit"].median
    stdin_ms = series["flake8 stdin"].median * 1000
    criteria = [
        ["cold / floor", f"{cold / series['floor'].median:.3f}",
         f"{cold_cpu / series['floor'].cpu:.3f}", "<= 1.3",
         "PASS" if cold / series["floor"].median <= 1.3 else "FAIL"],
        ratio_row("second project / cold", "second project", "cold"),
        ratio_row("facts-warm after an edit / cold", "facts-warm after an edit", "cold"),
        ["answer hit s", fmt_s(answer), fmt_s(series["answer hit"].cpu), "<= 0.1",
         "PASS" if answer <= 0.1 else "FAIL"],
        ["flake8 stdin ms", f"{stdin_ms:.0f}", f"{series['flake8 stdin'].cpu * 1000:.0f}",
         "<= 150", "PASS" if stdin_ms <= 150 else "FAIL"],
        ["peak RSS MB", f"{peak * 1.048576:.0f}", "", "<= 500",
         "PASS" if peak * 1.048576 <= 500 else "FAIL"],
    ]
    print(f"machine: {machine_description()}")
    print(f"{described}; venv {python.parent.parent} ({', '.join(PINS)}); "
          f"{len(paths)} files parsed cold ({first_party} first-party); load average after: "
          f"{load_average()}\n")
    print(table(
        ["row", f"median wall s ({args.runs} runs)", "min-max s", "median CPU s", "peak RSS MiB",
         "exit"],
        [[s.label, fmt_s(s.median), "-".join(fmt_s(x) for x in s.spread), fmt_s(s.cpu),
          f"{s.peak:.0f}", s.exits] for s in series.values()],
    ))
    print()
    print(table(["criterion", "wall", "CPU", "target", "met"], criteria))
    floor_f8 = series["flake8 stdin --select F"]
    start = series["python -c pass"]
    print(f"\nbeside them, in the same rounds: flake8's own floor (--select F, no check) "
          f"{floor_f8.median * 1000:.0f} ms wall, {floor_f8.cpu * 1000:.0f} ms CPU; the interpreter's "
          f"start (python -c pass) {start.median * 1000:.0f} ms wall, {start.cpu * 1000:.0f} ms CPU")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "runs": {label: [[r.wall, r.cpu, r.peak_mib, r.returncode] for r in s.runs]
                     for label, s in series.items()},
            "criteria": criteria, "files": len(paths), "first_party": first_party,
        }, indent=2))
    return 0 if all(row[-1] == "PASS" for row in criteria) else 1


def report_only(args: argparse.Namespace, series: dict[str, Series], described: str,
                python: Path) -> int:
    """The table of an ``--only`` run: its rows, and the criteria among them."""
    print(f"machine: {machine_description()}")
    print(f"{described}; {sys.executable}; venv {python.parent.parent} ({', '.join(PINS)}); "
          f"--only {','.join(sorted(args.only))}; load average after: {load_average()}\n")
    print(table(
        ["row", f"median wall s ({args.runs} runs)", "min-max s", "median CPU s", "peak RSS MiB",
         "exit"],
        [[s.label, fmt_s(s.median), "-".join(fmt_s(x) for x in s.spread), fmt_s(s.cpu),
          f"{s.peak:.0f}", s.exits] for s in series.values()],
    ))
    criteria: list[list[object]] = []
    if "answer hit" in series:
        hit = series["answer hit"]
        criteria.append(["answer hit s", fmt_s(hit.median), fmt_s(hit.cpu), "<= 0.1",
                         "PASS" if hit.median <= 0.1 else "FAIL"])
    if "flake8 stdin" in series:
        stdin = series["flake8 stdin"]
        criteria.append(["flake8 stdin ms", f"{stdin.median * 1000:.0f}", f"{stdin.cpu * 1000:.0f}",
                         "<= 150", "PASS" if stdin.median * 1000 <= 150 else "FAIL"])
    print()
    print(table(["criterion", "wall", "CPU", "target", "met"], criteria))
    start = series["python -c pass"]
    beside = f"the interpreter's start (python -c pass) {start.median * 1000:.0f} ms wall, " \
             f"{start.cpu * 1000:.0f} ms CPU"
    if "flake8 stdin --select F" in series:
        floor_f8 = series["flake8 stdin --select F"]
        beside = f"flake8's own floor (--select F, no check) {floor_f8.median * 1000:.0f} ms wall, " \
                 f"{floor_f8.cpu * 1000:.0f} ms CPU; " + beside
    print(f"\nbeside them, in the same rounds: {beside}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "runs": {label: [[r.wall, r.cpu, r.peak_mib, r.returncode] for r in s.runs]
                     for label, s in series.items()},
            "criteria": criteria}, indent=2))
    return 0 if all(row[-1] == "PASS" for row in criteria) else 1


if __name__ == "__main__":
    raise SystemExit(main())
