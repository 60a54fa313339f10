"""Summarise a py-spy ``--format raw`` (collapsed stacks) profile: self and inclusive shares.

Usage::

    py-spy record -r 200 --format raw -o prof.txt -- python -m flake8_importpolicy check ...
    python benchmarks/pyspy_summary.py prof.txt [--top 25] [--group]

``--group`` also sums the inclusive share by engine phase (parse, extraction visitor, function
analysis, graph traversal, resolution, cache I/O, interpreter query, start-up imports).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

PHASES = [
    ("interpreter query (subprocess)", re.compile(r"query_interpreter")),
    ("ast.parse", re.compile(r"^parse \(ast\.py")),
    ("function-body analysis", re.compile(r"analyse_functions")),
    ("extraction visitor (module level)", re.compile(r"extract_facts")),
    ("facts cache read (JSON)", re.compile(r"DiskFactsCache\.get")),
    ("facts cache write", re.compile(r"DiskFactsCache\.put")),
    ("source read + sha256", re.compile(r"PolicyEngine\._facts")),
    ("answers cache (validate/load/store)", re.compile(r"_load_valid|_store|_interpreter_info")),
    ("graph traversal (BFS, excluding the above)", re.compile(r"iter_breadth_first")),
    ("path search", re.compile(r"_resolve_uncached|_listdir")),
    ("output", re.compile(r"format_report")),
    ("start-up imports", re.compile(r"<module> \((?!flake8_importpolicy/__main__)|_find_and_load")),
]


def frame_name(frame: str) -> str:
    return re.sub(r":\d+\)$", ")", frame.strip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile", type=Path)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--group", action="store_true")
    args = ap.parse_args(argv)
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    phases: Counter[str] = Counter()
    total = 0
    for line in args.profile.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [frame_name(f) for f in stack.split(";") if f.strip()]
        total += count
        own[frames[-1]] += count
        for name in set(frames):
            inclusive[name] += count
        for phase, pattern in PHASES:  # first matching phase, outermost frame first
            if any(pattern.search(f) for f in frames):
                phases[phase] += count
                break
        else:
            phases["other"] += count
    print(f"{total} samples")
    print("\nself:")
    for name, count in own.most_common(args.top):
        print(f"  {100 * count / total:5.1f}%  {name}")
    print("\ninclusive:")
    for name, count in inclusive.most_common(args.top):
        print(f"  {100 * count / total:5.1f}%  {name}")
    if args.group:
        print("\nphases (inclusive, first match):")
        for phase, count in phases.most_common():
            print(f"  {100 * count / total:5.1f}%  {phase}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
