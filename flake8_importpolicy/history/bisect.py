"""``importpolicy bisect``: the first commit at which each finding of a light module shows.

The policy is read once, from ``--bad`` (or ``--policy``, the file on disk); each commit the search
tests is mirrored from git's objects into a private temporary directory
(:class:`~flake8_importpolicy.history.git.TreeMirror`) and checked there by the engine, with the
project's facts cache (keyed by file bytes, so a commit costs only the files it changed). The
repository's working tree, index, HEAD and stash are never touched; the temporary directory is
removed when the search ends, also when it is interrupted.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from flake8_importpolicy import codes
from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.analysis.resolve import query_interpreter
from flake8_importpolicy.answers.compute import find_interpreter_info
from flake8_importpolicy.answers.facts_cache import open_facts_cache
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.config.locate import find_policy
from flake8_importpolicy.history.git import GitRepository, TreeMirror
from flake8_importpolicy.history.search import search_first_bad
from flake8_importpolicy.model.errors import PolicyError
from flake8_importpolicy.model.files import POLICY_FILENAME, PYPROJECT_FILENAME
from flake8_importpolicy.model.findings import Report, Violation
from flake8_importpolicy.model.graph import Hop, HopKind
from flake8_importpolicy.model.history import (
    BisectFinding,
    BisectResult,
    BisectStatus,
    Commit,
    HistoryError,
    SkippedCommit,
)
from flake8_importpolicy.model.interpreter import InterpreterInfo
from flake8_importpolicy.model.policy import Policy
from flake8_importpolicy.model.ports import FactsCache
from flake8_importpolicy.model.reading import read_regular_file

__all__ = ["bisect_findings"]

FindingKey = tuple[str, str, str]
"""``(code, light module, the forbidden pattern (its ``[heavy]`` key) or "max-modules=N")``."""


@dataclass
class _Checked:
    """What checking one commit found."""

    findings: dict[FindingKey, Violation]
    lights: frozenset[str]
    problems: dict[str, str] = field(default_factory=dict)  # IPL005: module -> message
    reached: dict[FindingKey, tuple[Hop, ...]] = field(default_factory=dict)
    """An IPL008's statements: every hop of the counted closure's chains, those that bring in
    the most counted modules first (an IPL008 has no chain of its own)."""
    linked: dict[str, str] = field(default_factory=dict)
    """The files of the hops that are symbolic links (or under a linked directory): the path of
    the file they lead to, relative to the repository's top."""


def bisect_findings(
    start: Path,
    *,
    good: str,
    bad: str = "HEAD",
    policy_file: Path | None = None,
    lights: Sequence[str] = (),
    first_parent: bool = True,
    interpreter: str | None = None,
    target_versions: Iterable[tuple[int, int]] = (),
    use_cache: bool = True,
    jobs: int = 1,
    progress: Callable[[str], None] | None = None,
) -> BisectResult:
    """Search ``good..bad`` for the first commit of each finding.

    Args:
        start: a directory inside the repository (the working directory).
        good, bad: revisions (gitrevisions(7)); ``good`` must be an ancestor of ``bad``.
        policy_file: ``--policy``: a policy file on disk inside the repository, used as it is;
            None: the policy found from ``start`` (as ``check`` finds it), read at ``bad``.
        lights: light modules to search for (default: each light module with a finding at ``bad``;
            its findings that already show at ``good`` are not searched).
        first_parent: follow only first parents (default); False: every parent, as ``git bisect``.
        interpreter, target_versions, jobs: as for ``importpolicy check``.
        use_cache: use the policy's facts cache (``settings.cache-dir`` as it is in the working
            tree, shared with ``check``; nothing else is written outside the temporary directory).
        progress: called with a line of text before each commit is checked.

    Returns:
        The :class:`BisectResult`.

    Raises:
        HistoryError: not a git repository, a revision that names no commit, ``good`` not an
            ancestor of ``bad``, no policy at ``bad``, a source root outside the repository, a
            name that is not a light module of the policy.
        flake8_importpolicy.model.errors.InterpreterError: the interpreter cannot be queried.
    """
    with GitRepository(start) as repository:
        good_commit = repository.resolve_commit(good, "--good")
        bad_commit = repository.resolve_commit(bad, "--bad")
        if not repository.is_ancestor(good_commit.hash, bad_commit.hash):
            raise HistoryError(f"--good {good} ({good_commit.short}) is not an ancestor of --bad "
                               f"{bad} ({bad_commit.short})" + repository.shallow_note())
        scratch = Path(tempfile.mkdtemp(prefix="importpolicy-bisect-", dir=_scratch_parent())).resolve()
        try:
            options = _Options(first_parent, interpreter, tuple(target_versions), use_cache, jobs,
                               progress)
            return _Bisect(repository, scratch / "tree", good_commit, bad_commit,
                           options).run(start, policy_file, lights)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


@dataclass(frozen=True)
class _Options:
    """The command line's choices, the same for every commit checked."""

    first_parent: bool
    interpreter: str | None
    target_versions: tuple[tuple[int, int], ...]
    use_cache: bool
    jobs: int
    progress: Callable[[str], None] | None


class _Bisect:
    def __init__(self, repository: GitRepository, root: Path, good: Commit, bad: Commit,
                 options: _Options) -> None:
        self.repository = repository
        self.root = root
        self.good = good
        self.bad = bad
        self.options = options
        # the TOML files at first (the policy and the files it may extend), then the source roots
        self.mirror = TreeMirror(repository, root, only=(".toml",))
        self.checked: dict[str, _Checked] = {}
        self.skips: dict[str, str] = {}
        self.unreadable: dict[str, str] = {}  # a path of a commit's tree: why it cannot be read
        self.policy: Policy | None = None
        self.info: InterpreterInfo | None = None
        self.cache: FactsCache | None = None

    # -- set-up ------------------------------------------------------------------------------------

    def run(self, start: Path, policy_file: Path | None, lights: Sequence[str]) -> BisectResult:
        relative, text, origin = self._find_policy(start, policy_file)
        policy = self._load_policy(relative, text)
        for light in lights:
            if not policy.rules_for(light).light:
                raise HistoryError(f"{light!r} is not a light module of {relative}")
        self.policy = policy
        self.info = self._interpreter_info(policy)
        self.cache = open_facts_cache(policy) if self.options.use_cache else None

        at_bad = self._check(self.bad.hash)
        wanted = sorted(at_bad.findings) if not lights else sorted(
            key for key in at_bad.findings if key[1] in lights
        )
        asked = set(lights)
        if lights:
            self.policy = _restricted(policy, asked)
        else:
            self.policy = _restricted(policy, {key[1] for key in wanted})
        results: list[BisectFinding] = []
        if wanted:
            at_good = self._check(self.good.hash)
            for key in wanted:
                if key in at_good.findings:
                    if lights:
                        results.append(self._finding(key, BisectStatus.AT_GOOD, at_bad))
                    continue
                results.append(self._search(key))
        for light in sorted(asked - {key[1] for key in wanted}):
            results.append(BisectFinding(codes.IPL001.id, light, "", BisectStatus.NOT_AT_BAD))
        ordered = self._order
        skipped = tuple(
            SkippedCommit(self._commit(commit), self.skips[commit])
            for commit in sorted(self.skips, key=lambda c: ordered.get(c, -1))
        )
        return BisectResult(
            good=self.good, bad=self.bad, policy=relative, policy_origin=origin,
            first_parent=self.options.first_parent, commits=len(self._range), checked=len(self.checked),
            findings=tuple(sorted(results, key=lambda f: (f.light, f.code, f.heavy))),
            skipped=skipped, unreadable=tuple(sorted(self.unreadable.items())),
        )

    def _find_policy(self, start: Path, given: Path | None) -> tuple[str, bytes, str]:
        """``(path relative to the top, bytes, origin)`` of the policy to use."""
        top = self.repository.top
        if given is not None:
            path = given.absolute().resolve()
            relative = _inside(top, path)
            if relative is None:
                raise HistoryError(f"--policy {given}: not a file of the repository {top} (bisect "
                                   "reads the source roots from the repository's commits)")
            try:
                return relative, read_regular_file(path)[1], "--policy"
            except OSError as exc:
                raise HistoryError(f"--policy {given}: {exc.strerror or exc}") from None
        found = find_policy(start)
        candidates = [_inside(top, found)] if found is not None else []
        candidates += [POLICY_FILENAME, PYPROJECT_FILENAME]
        tree = self.repository.list_tree(self.bad.hash, [c for c in candidates if c])
        for relative in candidates:
            if relative and relative in tree:
                return relative, self.repository.read_blob(tree[relative].oid), "--bad"
        shown = candidates[0] or POLICY_FILENAME
        raise HistoryError(f"no policy file {shown} at --bad {self.bad.short}; pass --policy")

    def _load_policy(self, relative: str, text: bytes) -> Policy:
        """Load the policy as a file of ``--bad``'s tree (its bases too), with its cache directory
        and interpreter where they are in the working tree."""
        self.mirror.switch(self.bad.hash)
        path = self.root / relative
        self.mirror.put(relative, text)
        try:
            policy = load_policy(path)
        except PolicyError as exc:
            message = str(exc).replace(str(self.root) + os.sep, "")
            raise HistoryError(f"the policy at --bad {self.bad.short}: {message}") from None
        prefixes = []
        for source_root in policy.settings.source_roots:
            inside = _inside(self.root, source_root)
            if inside is None:
                raise HistoryError(f"source root {source_root} is outside the repository: bisect "
                                   "reads only the repository's commits")
            prefixes.append(inside if inside != "." else "")
        if "" in prefixes:
            prefixes = []
        if prefixes:
            prefixes.append(relative)
        self.mirror.narrow(prefixes)
        self.mirror.switch(self.bad.hash)  # now only the source roots
        self.mirror.put(relative, text)
        settings = policy.settings
        settings = dataclasses.replace(
            settings,
            cache_dir=self._in_working_tree(settings.cache_dir),
            interpreter=self._in_working_tree(settings.interpreter) if settings.interpreter else None,
            baseline=None,  # a finding the baseline accepts today still has a first commit
        )
        return dataclasses.replace(policy, settings=settings)

    def _in_working_tree(self, path: Path) -> Path:
        """A path of the mirror as the same path in the working tree (others as they are)."""
        inside = _inside(self.root, path)
        return path if inside is None else self.repository.top / inside

    def _interpreter_info(self, policy: Policy) -> InterpreterInfo:
        """The interpreter's facts, without the path entries that are first-party source roots of
        the working tree (an editable install): the commit's sources must come from the commit."""
        executable = policy.settings.interpreter_executable(self.options.interpreter)
        info = (find_interpreter_info(policy, executable) if self.options.use_cache
                else query_interpreter(executable))
        own = [self._in_working_tree(root) for root in policy.settings.source_roots]
        kept = tuple(entry for entry in info.sys_path
                     if not any(_inside(root, Path(entry)) is not None for root in own))
        return dataclasses.replace(info, sys_path=kept)

    # -- the search --------------------------------------------------------------------------------

    @property
    def _range(self) -> dict[str, tuple[str, ...]]:
        found: dict[str, tuple[str, ...]] | None = getattr(self, "_range_memo", None)
        if found is None:
            found = self.repository.find_range(self.good.hash, self.bad.hash,
                                               first_parent=self.options.first_parent)
            self._range_memo = found
        return found

    @property
    def _order(self) -> dict[str, int]:
        return {commit: number for number, commit in enumerate(self._range)}

    def _search(self, key: FindingKey) -> BisectFinding:
        def judge(commit: str) -> bool | None:
            checked = self._check(commit)
            if key in checked.findings:
                return True
            if key[1] not in checked.lights:
                self.skips[commit] = f"light module {key[1]} does not exist"
                return None
            new = self._new_problems(checked)
            if new:
                self.skips[commit] = checked.problems[new[0]]
                return None
            return False

        def known(commit: str) -> bool | None:
            """The verdict of a commit another finding's search checked already."""
            checked = self.checked.get(commit)
            if checked is None:
                return None
            if key in checked.findings:
                return True
            if key[1] not in checked.lights or self._new_problems(checked):
                return None
            return False

        commits = self._range
        found = search_first_bad(list(commits), commits, self.bad.hash, judge, known)
        if len(found) > 1:
            return BisectFinding(*key, BisectStatus.AMBIGUOUS,
                                 candidates=tuple(self._commit(c) for c in found),
                                 chain=self._chain(self.checked[self.bad.hash], key))
        return self._finding(key, BisectStatus.FOUND, self.checked[found[0]], found[0])

    def _new_problems(self, checked: _Checked) -> list[str]:
        """The modules that do not parse at a commit but parse at ``--bad``."""
        return sorted(set(checked.problems) - set(self.checked[self.bad.hash].problems))

    def _finding(self, key: FindingKey, status: BisectStatus, checked: _Checked,
                 commit: str | None = None) -> BisectFinding:
        chain = self._chain(checked, key)
        # the statements the commit may have added: the chain's, or for a budget the closure's
        hops = chain or tuple(self._repository_hop(hop) for hop in checked.reached.get(key, ()))
        # a module reached through a symbolic link: its statements are the linked file's
        hops = tuple(dataclasses.replace(hop, path=Path(checked.linked[hop.path.as_posix()]))
                     if hop.path is not None and hop.path.as_posix() in checked.linked else hop
                     for hop in hops)
        added = None
        if commit is not None and hops:
            parent = self._parent(commit)
            # only the hops' files: a release's diff against the last one is megabytes
            files = sorted({hop.path.as_posix() for hop in hops if hop.path is not None})
            lines = self.repository.find_added_lines(parent, commit, files)
            touched = [hop for hop in hops if hop.path is not None and hop.path.as_posix() in lines]
            added = self._first_new(touched, parent, commit, lines)
        return BisectFinding(*key, status, commit=self._commit(commit) if commit else None,
                             chain=chain, added=added)

    def _first_new(self, hops: Sequence[Hop], parent: str, commit: str,
                   lines: Mapping[str, list[tuple[int, int]]]) -> Hop | None:
        """The first of ``hops`` whose statement the commit introduced: one of whose lines the
        commit's diff adds (``lines``: a wrapped import's new ``    name,`` line too, though the hop
        is at the statement's first line), and not one the parent's file already holds, in the
        same place (same enclosing blocks), that the commit only touched (a comment appended, a
        line re-wrapped)."""
        files = sorted({hop.path.as_posix() for hop in hops if hop.path is not None})
        if not files:
            return None
        now = self.repository.list_tree(commit, files)
        before = self.repository.list_tree(parent, files)
        blobs = self.repository.read_blobs([entry.oid for entry in [*now.values(), *before.values()]
                                            if entry.mode.startswith("100")])
        for hop in hops:
            assert hop.path is not None
            path = hop.path.as_posix()
            old = before.get(path)
            if old is None or old.oid not in blobs:
                return hop  # a new file: every statement of it is new
            if hop.kind in (HopKind.PARENT_PACKAGE, HopKind.FINDER):
                continue  # a pseudo-statement at line 1 of a file the parent has already
            new = now.get(path)
            found = _statement_at(blobs[new.oid], hop.line) if new and new.oid in blobs else None
            span = (found[0], found[1]) if found is not None else (hop.line, hop.line)
            if not any(first <= span[1] and span[0] < first + count
                       for first, count in lines.get(path, ())):
                continue  # the diff adds none of the statement's lines
            statement = found[2] if found is not None else None
            previous = _statement_keys(blobs[old.oid])
            if statement is None or previous is None or statement not in previous:
                return hop
        return None

    def _chain(self, checked: _Checked, key: FindingKey) -> tuple[Hop, ...]:
        violation = checked.findings.get(key)
        if violation is None:
            return ()
        return tuple(self._repository_hop(hop) for hop in violation.chain)

    def _repository_hop(self, hop: Hop) -> Hop:
        """``hop`` with its path relative to the repository's top (a file of the mirror)."""
        if hop.path is None:
            return hop
        inside = self.mirror.to_repository_path(hop.path)
        return hop if inside is None else dataclasses.replace(hop, path=Path(inside))

    def _parent(self, commit: str) -> str:
        """The parent ``commit``'s diff is taken against: its first parent (git's empty tree for a
        root commit)."""
        parents = self._range.get(commit, ())
        if parents:
            return parents[0]
        try:
            return self.repository.resolve_commit(commit + "^1", "parent").hash
        except HistoryError:
            return _EMPTY_TREE

    def _commit(self, commit: str) -> Commit:
        if commit == self.bad.hash:
            return self.bad
        if commit == self.good.hash:
            return self.good
        described: dict[str, Commit] = getattr(self, "_described", {})
        if commit not in described:
            described.update(self.repository.describe_many([commit, *self.skips, *self.checked]))
            self._described = described
        return described.get(commit, Commit(commit, ""))

    def _check(self, commit: str) -> _Checked:
        found = self.checked.get(commit)
        if found is not None:
            return found
        if self.options.progress is not None:
            self.options.progress(f"checking {commit[:12]} ({len(self.checked) + 1} checked)")
        self.mirror.switch(commit)
        assert self.policy is not None
        with PolicyEngine(
            self.policy,
            interpreter=self.options.interpreter,
            target_versions=self.options.target_versions,
            facts_cache=self.cache,
            interpreter_info=self.info,
            jobs=self.options.jobs,
        ) as engine:
            report = engine.check()
            found = _checked(report, self.root, self.policy)
            for key, violation in found.findings.items():
                if violation.budget is not None:
                    found.reached[key] = _budget_hops(engine, self.policy, violation.light)
            for hops in [*(v.chain for v in found.findings.values()), *found.reached.values()]:
                for hop in hops:
                    if hop.path is None:
                        continue
                    real = self.mirror.linked_path(hop.path)
                    inside = self.mirror.to_repository_path(hop.path)
                    if real is not None and inside is not None:
                        found.linked[inside] = real
        self.unreadable.update(self.mirror.unreadable)
        self.checked[commit] = found
        return found


def _checked(report: Report, root: Path, policy: Policy) -> _Checked:
    """The findings of a commit's report, keyed as the search keys them: IPL001 once per forbidden
    pattern a light module reaches (the nearest module of a statement and those it also reaches:
    ``vllm.config.ec_manager_config`` counts as ``vllm.config``), IPL008 per budget."""
    findings: dict[FindingKey, Violation] = {}
    for violation in report.violations:
        if violation.budget is not None:
            findings[(codes.IPL008.id, violation.light,
                      f"max-modules={violation.budget.limit}")] = violation
            continue
        findings.setdefault((codes.IPL001.id, violation.light, violation.pattern), violation)
        rules = policy.rules_for(violation.light)
        for other in violation.also:
            rule = rules.forbidden_rule(other)
            pattern = rule.pattern.text if rule is not None else other
            findings.setdefault((codes.IPL001.id, violation.light, pattern), violation)
    problems: dict[str, str] = {}
    for problem in report.problems:
        if problem.code is codes.IPL005:
            arguments = dict(problem.arguments)
            where = _inside(root, problem.path) if problem.path is not None else None
            problems[arguments.get("module", "")] = (
                f"{where or arguments.get('module', '?')}: {arguments.get('problem', '')}"
            )
    return _Checked(findings, frozenset(report.light_modules), problems)


def _budget_hops(engine: PolicyEngine, policy: Policy, light: str) -> tuple[Hop, ...]:
    """Every hop of the chains by which ``light``'s counted closure reaches its modules
    (:meth:`~flake8_importpolicy.analysis.engine.PolicyEngine.count_closure`), the hops that bring
    in the most counted modules first (then by file, line and column)."""
    units = engine.count_closure(engine.find_budget_closure(light, policy.rules_for(light)))
    brought: dict[Hop, int] = {}
    for chain in units.values():
        for hop in chain:
            brought[hop] = brought.get(hop, 0) + 1
    return tuple(sorted(brought, key=lambda hop: (
        -brought[hop], hop.path.as_posix() if hop.path is not None else "", *hop.sort_key())))


def _statements(source: bytes) -> list[tuple[int, int, int, str]] | None:
    """Every statement of a module: ``(first line, last line, depth, key)``, where the key is the
    statement without positions or comments (:func:`ast.dump`) and the blocks around it (a
    function's or class's name, an ``if``'s or ``while``'s test, which branch); None when it
    does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found: list[tuple[int, int, int, str]] = []

    def visit(statements: list[ast.stmt], around: str, depth: int) -> None:
        for statement in statements:
            key = f"{around}/{ast.dump(statement)}"
            found.append((statement.lineno, statement.end_lineno or statement.lineno, depth, key))
            header = type(statement).__name__ + ":" + str(getattr(statement, "name", ""))
            test = getattr(statement, "test", None)
            if isinstance(test, ast.expr):
                header += ":" + ast.dump(test)
            for branch in ("body", "orelse", "handlers", "finalbody", "cases"):
                inner = getattr(statement, branch, None)
                if isinstance(inner, list) and all(isinstance(s, ast.stmt) for s in inner):
                    visit(inner, f"{around}/{header}.{branch}", depth + 1)
                elif isinstance(inner, list):
                    for part in inner:  # except handlers, match cases
                        body = getattr(part, "body", None)
                        if isinstance(body, list):
                            label = ast.dump(getattr(part, "type", None) or
                                             getattr(part, "pattern", None) or ast.Pass())
                            visit(body, f"{around}/{header}.{branch}:{label}", depth + 1)

    visit(tree.body, "", 0)
    return found


def _statement_keys(source: bytes) -> set[str] | None:
    """The keys of :func:`_statements`, or None when the module does not parse."""
    found = _statements(source)
    return None if found is None else {key for _first, _last, _depth, key in found}


def _statement_at(source: bytes, line: int) -> tuple[int, int, str] | None:
    """``(first line, last line, key)`` of the innermost statement of the module that spans
    ``line``."""
    found = _statements(source)
    if found is None:
        return None
    spanning = [(depth, first, last, key) for first, last, depth, key in found
                if first <= line <= last]
    if not spanning:
        return None
    _depth, first, last, key = max(spanning)
    return first, last, key


def _scratch_parent() -> str | None:
    """Where the mirror goes: ``$TMPDIR`` when it is set, else ``/dev/shm`` when it is a writable
    directory with at least :data:`_SHM_FREE` bytes free (creating thousands of small files in
    memory costs a third of what it costs on a disk), else the system's temporary directory."""
    if os.environ.get("TMPDIR"):
        return None
    try:
        found = os.statvfs(_SHM)
    except OSError:
        return None
    if found.f_bavail * found.f_frsize < _SHM_FREE or not os.access(_SHM, os.W_OK | os.X_OK):
        return None
    return _SHM


_SHM = "/dev/shm"
_SHM_FREE = 1 << 30


def _restricted(policy: Policy, lights: set[str]) -> Policy:
    """``policy`` with only the ``[light]`` rules that name one of ``lights`` (the other light
    modules need not be checked at every commit)."""
    rules = tuple(rule for rule in policy.light
                  if any(rule.pattern.matches_exactly(light) for light in lights))
    return dataclasses.replace(policy, light=rules)


def _inside(top: Path, path: Path) -> str | None:
    """``path`` relative to ``top`` with ``/`` separators (``"."`` for ``top`` itself), or None when
    it is outside."""
    try:
        relative = path.relative_to(top)
    except ValueError:
        try:
            relative = path.resolve().relative_to(top)
        except (ValueError, OSError):
            return None
    return relative.as_posix()


_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""git's empty tree (``git hash-object -t tree /dev/null``): what a root commit is compared with."""
