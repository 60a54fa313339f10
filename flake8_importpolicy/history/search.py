"""The search of ``git bisect``, over a range of commits held in memory.

Given the commits of ``good..bad`` with their parents inside the range, and a judge that says
whether a commit is bad (True), good (False) or cannot be judged (None: skipped), find the first bad
commit: the one that is bad while every parent is good. Each step tests the commit that splits the
remaining candidates most evenly (the commits that are ancestors of the latest bad commit and of no
good one), as git-bisect(1) does; a skipped commit is passed over for the next best, and when only
skipped commits are left to test, every remaining candidate is returned (``git bisect skip``:
"the first bad commit could be any of").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

__all__ = ["search_first_bad"]


def search_first_bad(
    order: Sequence[str],
    parents: Mapping[str, Sequence[str]],
    bad: str,
    judge: Callable[[str], bool | None],
    known: Callable[[str], bool | None] | None = None,
) -> list[str]:
    """The first bad commit of a range, or the candidates left when skips keep it open.

    Args:
        order: the range's commits, parents before children.
        parents: each commit's parents inside the range (a commit whose parents are all outside
            the range has none: they are good).
        bad: a commit of the range known to be bad (``--bad``).
        judge: True for a bad commit, False for a good one, None to skip it; called at most once
            per commit by this search.
        known: the verdict of a commit when it is known already at no cost (another search of the
            same range checked it), else None; applied before each step, so searches that share
            their commits' checks (every finding of one run) test fewer commits.

    Returns:
        ``[first bad commit]``, or the candidates (in ``order``) when skipped commits leave several.
    """
    index = {commit: number for number, commit in enumerate(order)}
    ancestors: dict[str, int] = {}  # bit i set: order[i] is the commit or one of its ancestors
    for commit in order:
        mask = 1 << index[commit]
        for parent in parents.get(commit, ()):
            mask |= ancestors.get(parent, 0)
        ancestors[commit] = mask
    alive = ancestors[bad]
    latest_bad = bad
    skipped: set[str] = set()
    while True:
        if known is not None:
            for commit in order:
                if alive >> index[commit] & 1 and commit != latest_bad and commit not in skipped:
                    verdict = known(commit)
                    if verdict is True and ancestors[commit] & alive != alive:
                        alive &= ancestors[commit]
                        latest_bad = commit
                    elif verdict is False:
                        alive &= ~ancestors[commit]
        count = alive.bit_count()
        if count <= 1:
            return [latest_bad]
        best: str | None = None
        best_score = -1
        for commit in order:
            if not alive >> index[commit] & 1 or commit == latest_bad or commit in skipped:
                continue
            inside = (ancestors[commit] & alive).bit_count()
            score = min(inside, count - inside)
            if score > best_score:
                best, best_score = commit, score
        if best is None:
            return [commit for commit in order if alive >> index[commit] & 1]
        verdict = judge(best)
        if verdict is None:
            skipped.add(best)
        elif verdict:
            alive &= ancestors[best]
            latest_bad = best
        else:
            alive &= ~ancestors[best]
