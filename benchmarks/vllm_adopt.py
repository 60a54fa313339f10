"""The README's adoption walk on vLLM 0.33.0 (3,231 files), timed.

Usage::

    python benchmarks/vllm_adopt.py [--repeat 3] [--limit 20] [--importpolicy CMD]

Steps (the unpacked wheel comes from ``fetch.py``, cached outside the repository; the walk runs in a
copy under ``<cache>/adopt/``):

1. ``importpolicy suggest --no-cache`` on the tree without a policy, ``--repeat`` times, against a
   cold ``importpolicy check --no-cache`` with ``benchmarks/vllm_seed.py``'s policy on the pristine
   tree, as many times (medians; the target: suggest at most 2x the check). Its draft is
   summarised: light candidates with their predicted closures and the heavy candidates they reach,
   heavy candidates.
2. The draft is saved as ``policy.toml`` and edited as the README's walk edits it: the baseline
   named, the incident's light module (``vllm.models.common.ops``) added and ``vllm.config`` moved
   from the light candidates to ``[heavy]`` (as in ``vllm_seed.py``'s policy);
   ``check --write-baseline`` records today's findings, and ``check`` is clean.
3. The incident's re-export (``vllm_seed.py``'s line) is added to ``vllm/models/common/ops/
   __init__.py``: flagged; removed: clean.
4. One baselined finding is fixed (its first-hop statement, a one-line import that covers no other
   statement, is deleted: the walk's stand-in for a real fix): its entry is IPL009 until
   ``--write-baseline`` drops it.

Prints each step's command, exit status, wall time and the lines that matter.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import measure, script  # noqa: E402
from fetch import cache_root, fetch_wheel_tree  # noqa: E402
from vllm_seed import NAME, OPS_INIT, SEED_LINE, VERSION, seed_edit, write_policy  # noqa: E402


def run(cmd: list[str], cwd: Path) -> tuple[int, str, str, float]:
    done = measure(cmd, cwd=cwd, env=dict(os.environ), peak=False)
    return done.returncode, done.stdout, done.stderr, done.wall


def step(title: str, cmd: list[str], cwd: Path, expect: int | None = None) -> tuple[int, str]:
    code, out, err, wall = run(cmd, cwd)
    shown = " ".join(shlex.quote(c) for c in cmd[1:])
    print(f"\n$ importpolicy {shown}   # {title}: exit {code}, {wall:.2f} s")
    for line in out.splitlines()[-12:]:
        print(f"  {line}")
    if expect is not None and code != expect:
        print(f"  !! expected exit {expect}; stderr: {err.strip()[:500]}")
    return code, out


def fresh_copy(pristine: Path) -> Path:
    work = cache_root() / "adopt" / f"{NAME}-{VERSION}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    shutil.copytree(pristine / NAME, work / NAME)
    for info in pristine.glob("*.dist-info"):
        shutil.copytree(info, work / info.name)
    return work


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each (median)")
    parser.add_argument("--limit", type=int, default=20, help="suggest --limit")
    parser.add_argument("--importpolicy", default=None, help="command to run (default: the "
                        "importpolicy script next to this interpreter)")
    args = parser.parse_args(argv)
    base = shlex.split(args.importpolicy) if args.importpolicy else [script("importpolicy")]

    pristine = fetch_wheel_tree(NAME, VERSION)
    seed_policy = write_policy(pristine)
    work = fresh_copy(pristine)
    files = sum(1 for _ in (work / NAME).rglob("*.py"))
    print(f"vLLM {VERSION}: {files} .py files; walk in {work}")

    check_cmd = base + ["check", "--policy", str(seed_policy), "--no-cache"]
    suggest_cmd = base + ["suggest", "--no-cache", "--limit", str(args.limit)]
    checks, suggests = [], []
    for _ in range(args.repeat):  # interleaved, so both see the same machine
        checks.append(run(check_cmd, pristine)[3])
        code, out, err, wall = run(suggest_cmd, work)
        if code != 0:
            print(f"suggest failed ({code}): {err}", file=sys.stderr)
            return 1
        suggests.append(wall)
    check_s, suggest_s = statistics.median(checks), statistics.median(suggests)
    print(f"\ncold check (vllm_seed.py's policy): median {check_s:.3f} s of {checks!r}")
    print(f"suggest --no-cache:                 median {suggest_s:.3f} s of {suggests!r}")
    print(f"suggest / cold check: {suggest_s / check_s:.2f} (target <= 2)")

    data = json.loads(run(suggest_cmd + ["--format", "json"], work)[1])
    print(f"\nsuggest read {data['modules']} first-party modules; heavy threshold "
          f"{data['threshold']} modules")
    print("light candidates (score, module, importers, predicted closure, reaches):")
    for c in data["light"]:
        print(f"  {c['score']:>8g}  {c['module']:<48} {c['importers']:>4}  {c['closure']:>4}  "
              f"{', '.join(c['reaches']) or '-'}")
    print("heavy candidates:")
    for c in data["heavy"]:
        extra = f"closure ~{c['closure']}, imported by {c['importers']}" if c["closure"] else "preset"
        print(f"  {c['module']:<52} {c['why']:<14} {extra}")

    # 2. the draft as the policy, naming the baseline (the edit step)
    (work / "policy.toml").unlink(missing_ok=True)
    step("draft", suggest_cmd + ["--output", "policy.toml"], work, 0)
    policy = work / "policy.toml"
    text = policy.read_text().replace(
        '[settings]\n', '[settings]\nbaseline = "importpolicy-baseline.json"\n', 1)
    text = re.sub(r'(?m)^(# .*\n)*\[light\."vllm\.config"\]\nreason = .*\n\n?', "", text)
    heavy = '"vllm.config" = "imports torch and probes the platform"\n'
    text = text.replace("[heavy]\n", "[heavy]\n" + heavy, 1) if "[heavy]\n" in text else \
        text.replace("\n# 1. ", "\n[heavy]\n" + heavy + "\n# 1. ", 1)
    text += ('\n[light."vllm.models.common.ops"]\n'
             'reason = "imported by the API server before EngineCore forks"\n')
    policy.write_text(text)
    step("record today's findings", base + ["check", "--write-baseline"], work, 0)
    entries = json.loads((work / "importpolicy-baseline.json").read_text())["entries"]
    print(f"  baseline: {len(entries)} entries")
    step("clean", base + ["check"], work, 0)

    # 3. the incident's re-export
    ops = work / OPS_INIT
    before = ops.read_text()
    seed_edit(work)
    step(f"re-added {SEED_LINE!r}", base + ["check"], work, 1)
    ops.write_text(before)
    step("removed", base + ["check"], work, 0)

    # 4. fix one baselined finding: delete its first hop's one-line statement
    raw = json.loads(run(base + ["check", "--format", "json", "--no-cache", "--policy",
                                 str(write_unbaselined(work))], work)[1])
    fixed = None
    for violation in raw["violations"]:
        if violation["code"] != "IPL001" or not violation["chain"] or violation["covers"] \
                or violation["chain"][0]["kind"] == "parent-package":
            continue
        path = work / violation["path"]
        original = path.read_text()
        lines = original.splitlines(keepends=True)
        statement = lines[violation["line"] - 1]
        if not statement.startswith(("import ", "from ")) or "(" in statement \
                or statement.rstrip().endswith("\\"):
            continue
        lines[violation["line"] - 1] = "\n"
        path.write_text("".join(lines))
        # a fix of exactly one finding: one stale entry, nothing new
        after = json.loads(run(base + ["check", "--format", "json"], work)[1])
        stale = [p for p in after["problems"] if p["code"] == "IPL009"]
        if len(stale) == 1 and not after["violations"]:
            fixed = f"{violation['path']}:{violation['line']}: {statement.strip()}"
            break
        path.write_text(original)
    (work / "policy-unbaselined.toml").unlink()
    if fixed is None:
        print("\nno baselined finding with a one-line first-hop import to fix")
        return 0
    print(f"\nfixed: deleted {fixed}")
    step("its entry is stale", base + ["check"], work, 1)
    step("drop it", base + ["check", "--write-baseline"], work, 0)
    step("clean again", base + ["check"], work, 0)
    return 0


def write_unbaselined(work: Path) -> Path:
    """The policy without its baseline, to list today's findings with their lines."""
    path = work / "policy-unbaselined.toml"
    path.write_text((work / "policy.toml").read_text().replace(
        'baseline = "importpolicy-baseline.json"\n', ""))
    return path


if __name__ == "__main__":
    raise SystemExit(main())
