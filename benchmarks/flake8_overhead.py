"""Per-file overhead of the flake8 plugin on vLLM 0.33.0, as an editor pays it (one process per lint).

Usage::

    python benchmarks/flake8_overhead.py [--runs 21] [--summary-json PATH]

Steps:

1. Fetch and unpack the vllm 0.33.0 wheel with ``fetch.py`` (cached under
   ``~/.cache/flake8-importpolicy``, never inside the repo) and make a hard-linked copy
   ``seeded/vllm-0.33.0-flake8-overhead`` with the seeded re-export line in
   ``vllm/models/common/ops/__init__.py`` (line 6) and the 5-light policy below.
2. Warm up: one ``flake8 --select IPL`` run builds the facts cache and the per-file index.
3. For each file, alternate ``flake8 --select IPL FILE`` and ``flake8 --select F FILE`` (cwd: the
   tree; PYTHONDONTWRITEBYTECODE unset so both sides run from bytecode) and report the medians of
   wall time and of CPU time (user + system of the flake8 process, which other load on the machine
   disturbs much less) and the overhead, the difference of the medians. With ``--select F`` the
   plugin still loads but stops at once, so the difference is what the check costs per file.
4. Less noisy, for the same files: the plugin's own time in a fresh process that has flake8 loaded
   (import of the plugin module plus ``run()``), timed inside that process.

Files: (a) the light package ``vllm/models/common/ops/__init__.py`` (IPL001), (b) a module on the
reported chain, ``vllm/models/common/ops/fused_allreduce_rms_norm.py`` (IPL002), (c) an unrelated
module outside every light closure, ``vllm/v1/core/sched/output.py``. Also shown, not part of the
target: (d) the light package from an unsaved editor buffer that differs from the disk
(``flake8 -``), which re-checks with the engine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CODEBASES, measure, render_policy, vllm_light  # noqa: E402
from fetch import MARKER, build_once, cache_root, fetch_wheel_tree  # noqa: E402
import vllm_seed  # noqa: E402
from vllm_seed import NAME, SEED_LINE, VERSION, seed_edit  # noqa: E402

COPY = "vllm-0.33.0-flake8-overhead"
OPS_INIT = str(vllm_seed.OPS_INIT)

POLICY_TOML = render_policy(
    vllm_light("vllm.models.common.ops", "vllm.envs", "vllm.logger", "vllm.platforms",
               "vllm.entrypoints.cli.main"),
    CODEBASES["vllm"].heavy,
    header="Import-time policy for the flake8 overhead benchmark: 5 light modules of vLLM 0.33.0.",
)

FILES = {
    "(a) light __init__ (IPL001)": OPS_INIT,
    "(b) module on the chain (IPL002)": "vllm/models/common/ops/fused_allreduce_rms_norm.py",
    "(c) unrelated module": "vllm/v1/core/sched/output.py",
}


def make_tree() -> Path:
    """The hard-linked, seeded copy with the policy (built once; files we edit are unlinked first,
    so the pristine tree is never modified)."""
    dest = cache_root() / "seeded" / COPY
    if (dest / MARKER).is_file() and (dest / "policy.toml").read_text() != POLICY_TOML:
        shutil.rmtree(dest)  # made for another policy
    source = fetch_wheel_tree(NAME, VERSION)

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    def build(tmp: Path) -> str:
        shutil.copytree(
            source, tmp, copy_function=link,
            ignore=shutil.ignore_patterns(MARKER, "__pycache__", ".importpolicy_cache", "policy.toml"),
        )
        ops = tmp / OPS_INIT
        text = ops.read_text()
        ops.unlink()  # break the hard link before the edit
        ops.write_text(text)
        seed_edit(tmp)
        (tmp / "policy.toml").write_text(POLICY_TOML)
        return f"hard-linked from {source}\n"

    return build_once(dest, build)


def flake8(
    args: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None
) -> tuple[float, float, str]:
    """Run flake8; return its wall time, its CPU time (user + system, which other load on the
    machine disturbs much less) and its output."""
    cmd = [sys.executable, "-m", "flake8", *args]
    run = measure(cmd, cwd=cwd, env=env, stdin=stdin, peak=False)
    if run.returncode not in (0, 1) or run.stderr.strip():
        raise SystemExit(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stdout}{run.stderr}")
    return run.wall, run.cpu, run.stdout


_IN_PROCESS = """
import ast, sys, time
import flake8.checker, flake8.main.application, flake8.style_guide
path = sys.argv[1]
lines = open(path, encoding="utf-8").readlines()
started = time.perf_counter()
from flake8_importpolicy.flake8_checker import ImportPolicyChecker
found = list(ImportPolicyChecker(ast.Module(body=[], type_ignores=[]), path, lines).run())
print((time.perf_counter() - started) * 1000, len(found))
"""


def plugin_ms(path: str, tree: Path, env: dict[str, str]) -> float:
    proc = subprocess.run([sys.executable, "-c", _IN_PROCESS, path], cwd=tree, env=env,
                          capture_output=True, text=True, check=True)
    return float(proc.stdout.split()[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=21, help="runs per command (default: 21)")
    parser.add_argument("--summary-json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)

    tree = make_tree()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"tree: {tree}\npython: {sys.executable}\nruns per command: {args.runs}\n")

    started = time.perf_counter()
    _, _, out = flake8(["--select", "IPL", OPS_INIT], tree, env)  # warm-up: builds caches, index
    print(f"warm-up (builds the caches unless present): {time.perf_counter() - started:.2f}s")
    print(out)

    buffer = (tree / OPS_INIT).read_text().replace(SEED_LINE + "\n", "")
    cases: list[tuple[str, list[str], list[str], str | None]] = [
        (label, ["--select", "IPL", path], ["--select", "F", path], None)
        for label, path in FILES.items()
    ]
    cases.append((
        "(d) light __init__, unsaved buffer (info)",
        ["--select", "IPL", "-", "--stdin-display-name", OPS_INIT],
        ["--select", "F", "-", "--stdin-display-name", OPS_INIT],
        buffer,
    ))
    rows = []
    for label, ipl_args, base_args, stdin in cases:
        for warm in (ipl_args, base_args):
            flake8(warm, tree, env, stdin)
        ipl, base = [], []
        for _ in range(args.runs):
            ipl.append(flake8(ipl_args, tree, env, stdin)[:2])
            base.append(flake8(base_args, tree, env, stdin)[:2])
        row: dict[str, object] = {"case": label, "command": "flake8 " + " ".join(ipl_args)}
        for column, index in (("wall", 0), ("cpu", 1)):
            with_ipl = statistics.median(run[index] for run in ipl) * 1000
            plain = statistics.median(run[index] for run in base) * 1000
            row[f"{column}_ipl_ms"] = with_ipl
            row[f"{column}_plain_ms"] = plain
            row[f"{column}_overhead_ms"] = with_ipl - plain
        if stdin is None:
            row["plugin_ms"] = statistics.median(
                plugin_ms(ipl_args[-1], tree, env) for _ in range(args.runs)
            )
        rows.append(row)

    print("medians in ms; overhead = median(--select IPL) - median(--select F); plugin = the")
    print("plugin's import + run() timed inside a fresh process with flake8 loaded\n")
    print(f"{'case':42} {'wall: IPL':>9} {'F':>6} {'overhead':>8}   {'cpu: IPL':>8} {'F':>6} "
          f"{'overhead':>8}   {'plugin':>6}")
    for row in rows:
        plugin = f"{row['plugin_ms']:6.1f}" if "plugin_ms" in row else f"{'-':>6}"
        print(f"{row['case']:42} {row['wall_ipl_ms']:9.1f} {row['wall_plain_ms']:6.1f} "
              f"{row['wall_overhead_ms']:8.1f}   {row['cpu_ipl_ms']:8.1f} {row['cpu_plain_ms']:6.1f} "
              f"{row['cpu_overhead_ms']:8.1f}   {plugin}")
    if args.summary_json:
        Path(args.summary_json).write_text(json.dumps({"tree": str(tree), "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
