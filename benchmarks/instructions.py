"""Instructions executed by a cold check, this engine against a git revision's: a measure that machine
load does not move.

Usage::

    python benchmarks/instructions.py --engine-rev REV [--codebases vllm,transformers,torch]

Wall-clock medians on a shared machine move by ±5 % from one series to the next
(docs/performance-history.md, 2026-12-01: vLLM against ``b4f16de``), which hides a change of a few
percent. Valgrind's callgrind
counts the instructions a process executes; for the same inputs the count repeats to within about
0.1 %. For each codebase of ``compare.py`` (its policy of 5 light modules, under the bench cache),
this runs ``importpolicy check --no-cache --jobs 1 --format json`` once per engine under
``valgrind --tool=callgrind`` (the interpreter query, a child process, is not counted) and prints
the counts, their ratio, the count of ``python -c pass`` (the interpreter's start-up, the same for
both), and whether the two reports are the same. Needs ``valgrind`` on ``PATH``; nothing is
imported from the analysed code.

The ratio without OpenSSL leaves out the instructions executed in ``libcrypto`` (the SHA-256 of
every file read): valgrind's CPU has no SHA extensions, so OpenSSL hashes in plain code, about 40
instructions a byte, where this machine's CPU hashes 1.7 GB/s natively. An engine that hashes less
than another looks cheaper in the plain count than it runs; the ratio without OpenSSL is the closer
one to wall time. It needs ``callgrind_annotate`` (installed with valgrind).

The working tree's engine is the repository's ``flake8_importpolicy`` (first on ``PYTHONPATH``);
``--engine-rev`` takes any git revision (``git archive`` of its ``flake8_importpolicy``, as
``compare.py --engine-rev`` does).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    CODEBASES,
    REPO,
    bench_env,
    cache_root,
    snapshot_engine_rev,
    table,
    write_setup,
)
from fetch import fetch_wheel_tree  # noqa: E402


def count_instructions(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, int, str]:
    """``(instructions executed by argv's process, those of them in libcrypto, its stdout)`` under
    callgrind.

    Raises:
        SystemExit: valgrind or callgrind_annotate is missing, or the command failed (exit other
            than 0 or 1).
    """
    with tempfile.TemporaryDirectory(prefix="ip-callgrind-") as out:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.out", *argv],
            env=env, cwd=cwd, capture_output=True, text=True,
        )
        found = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode not in (0, 1) or found is None:
            raise SystemExit(f"{' '.join(argv)} failed under valgrind (exit {done.returncode}):\n"
                             f"{done.stderr[-2000:]}")
        annotated = subprocess.run(
            ["callgrind_annotate", "--inclusive=no", "--threshold=100", f"{out}/callgrind.out"],
            capture_output=True, text=True, check=True,
        ).stdout
    crypto = sum(int(line.split()[0].replace(",", "")) for line in annotated.splitlines()
                 if "libcrypto" in line and line.strip()[:1].isdigit())
    return int(found.group(1)), crypto, done.stdout


def _same(mine: object, theirs: object) -> str:
    """How the two engines' JSON reports compare: ``identical``, ``same violations`` (light,
    heavy and line of each; a newer engine may report more, such as IPL006 sites) or ``differ``."""
    if json.dumps(mine, sort_keys=True) == json.dumps(theirs, sort_keys=True):
        return "identical"

    def violations(report: object) -> list[tuple[object, ...]]:
        assert isinstance(report, dict)
        return sorted((v["code"], v["light"], v["heavy"], v["path"], v["line"])
                      for v in report.get("violations", []))

    return "same violations" if violations(mine) == violations(theirs) else "differ"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine-rev", required=True, help="git revision to compare with")
    parser.add_argument("--codebases", default="vllm", help="comma-separated: vllm,transformers,torch")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        raise SystemExit("valgrind (with callgrind_annotate) is not installed (apt install valgrind)")
    rev_path, rev_description = snapshot_engine_rev(args.engine_rev)
    engines = {"working tree": REPO, args.engine_rev: rev_path}
    print(f"engines: working tree ({REPO}) and {rev_description}; Python {sys.version.split()[0]}",
          file=sys.stderr)
    rows = []
    for key in args.codebases.split(","):
        cb = CODEBASES[key]
        tree = fetch_wheel_tree(cb.dist, cb.version)
        setup = write_setup(cache_root() / "bench" / "compare" / key, tree, cb.packages, cb.light,
                            cb.heavy)
        argv = [sys.executable, "-m", "flake8_importpolicy", "check", "--policy", str(setup.policy),
                "--format", "json", "--no-cache", "--jobs", "1"]
        counts: dict[str, int] = {}
        crypto: dict[str, int] = {}
        reports: dict[str, object] = {}
        with tempfile.TemporaryDirectory(prefix="ip-instructions-") as cwd:
            # The repository must not be the working directory: its package would shadow the
            # revision's snapshot.
            for name, path in engines.items():
                env = bench_env(path)
                subprocess.run(argv, env=env, cwd=cwd, capture_output=True)  # writes bytecode
                counts[name], crypto[name], stdout = count_instructions(argv, env, Path(cwd))
                reports[name] = json.loads(stdout)
            floor, _, _ = count_instructions([sys.executable, "-c", "pass"], bench_env(None),
                                             Path(cwd))
        mine, theirs = counts["working tree"], counts[args.engine_rev]
        plain = (mine - crypto["working tree"]) / (theirs - crypto[args.engine_rev])
        rows.append((f"{key} {cb.version}", f"{mine / 1e6:.1f}", f"{theirs / 1e6:.1f}",
                     f"{mine / theirs:.3f}", f"{plain:.3f}",
                     f"{(mine - floor) / (theirs - floor):.3f}",
                     f"{crypto['working tree'] / 1e6:.1f} / {crypto[args.engine_rev] / 1e6:.1f}",
                     f"{floor / 1e6:.1f}", _same(*reports.values())))
        print(f"  {key}: {mine / theirs:.3f} (without OpenSSL {plain:.3f})", file=sys.stderr)
    print(table(["codebase", "working tree (M instr.)", f"{args.engine_rev} (M instr.)", "ratio",
                 "ratio without OpenSSL", "ratio above start-up", "in OpenSSL (M instr.)",
                 "python -c pass (M instr.)", "reports"], rows))


if __name__ == "__main__":
    main()
