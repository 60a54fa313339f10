"""``importpolicy bisect`` on real git repositories made by the tests (``git init`` in a temporary
directory): the first commit of each finding, the hop it added, skips, merges, usage errors, and the
proof that the working tree, the index, HEAD and the stash are never touched, also when the run is
interrupted."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import HANG_CATCHER

from flake8_importpolicy.history.search import search_first_bad

POLICY = """\
[settings]
source-roots = ["src"]
external = "stop"

[heavy]
"pkg.config" = "imports torch and probes CUDA"

[light."pkg.ops"]
reason = "imported by the API server before the engine forks"
"""

BASE = {
    "policy.toml": POLICY,
    "src/pkg/__init__.py": "",
    "src/pkg/config.py": "import torch\n",
    "src/pkg/ops/__init__.py": "from .layernorm import rms_norm\n",
    "src/pkg/ops/layernorm.py": "def rms_norm(x):\n    return x\n",
    "src/pkg/ops/fused.py": "from pkg.config import CUDA\n\n\ndef fused(x):\n    return x\n",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-01-01T00:00:00", "GIT_COMMITTER_DATE":
           "2026-01-01T00:00:00"}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, env=env, timeout=HANG_CATCHER)
    return done.stdout.strip()


def write(repo: Path, files: dict[str, str | None]) -> None:
    for name, text in files.items():
        path = repo / name
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def commit(repo: Path, message: str, files: dict[str, str | None] | None = None) -> str:
    write(repo, files or {})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def make_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "dev@example.com")
    git(path, "config", "user.name", "Dev")
    git(path, "config", "commit.gpgsign", "false")
    commit(path, "initial", BASE)  # type: ignore[arg-type]
    return path


def noise(repo: Path, count: int, start: int = 0) -> None:
    for number in range(start, start + count):
        commit(repo, f"docs: note {number}", {f"notes/{number}.txt": f"{number}\n"})


def bisect(repo: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flake8_importpolicy", "bisect", *args],
        cwd=cwd or repo, capture_output=True, text=True, timeout=HANG_CATCHER,
    )


REEXPORT = "from .layernorm import rms_norm\nfrom .fused import fused\n"


@pytest.fixture()
def incident(tmp_path: Path) -> tuple[Path, str, str]:
    """A history of 12 commits whose 6th adds the re-export (``from .fused import fused``) that
    makes the light package ``pkg.ops`` import ``pkg.config``."""
    repo = make_repo(tmp_path / "repo")
    good = git(repo, "rev-parse", "HEAD")
    noise(repo, 5)
    culprit = commit(repo, "ops: re-export fused for convenience",
                     {"src/pkg/ops/__init__.py": REEXPORT})
    noise(repo, 6, start=5)
    return repo, good, culprit


def test_finds_the_commit_its_subject_and_the_hop_it_added(incident: tuple[Path, str, str]) -> None:
    repo, good, culprit = incident
    done = bisect(repo, "--good", good)
    assert done.returncode == 0, done.stderr
    assert f"first commit: {culprit[:12]} ops: re-export fused for convenience" in done.stdout
    assert "it added: src/pkg/ops/__init__.py:2: pkg.ops -> pkg.ops.fused (from-import)" in done.stdout
    assert f"policy: policy.toml at --bad {git(repo, 'rev-parse', 'HEAD')[:12]}" in done.stdout
    assert "12 commits (first-parent history)" in done.stdout


def test_json(incident: tuple[Path, str, str]) -> None:
    repo, good, culprit = incident
    done = bisect(repo, "--good", good, "--format", "json", "pkg.ops")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    [finding] = data["findings"]
    assert finding["status"] == "found"
    assert finding["commit"] == {"hash": culprit, "subject": "ops: re-export fused for convenience"}
    assert finding["added"]["path"] == "src/pkg/ops/__init__.py"
    assert finding["added"]["line"] == 2
    assert [hop["imported"] for hop in finding["chain"]] == ["pkg.ops.fused", "pkg.config"]
    assert data["policy"] == {"path": "policy.toml", "from": "--bad"}
    assert data["commits"] == 12
    assert data["checked"] <= 7  # --bad, --good and about log2(12) steps


def _state(repo: Path) -> dict[str, object]:
    """Everything of the repository a user could lose: every file of the working tree (bytes and
    mode, untracked ones too), the index file, HEAD, every ref, the stash and git status."""
    files: dict[str, tuple[str, int]] = {}
    for directory, dirs, names in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in (".git", ".importpolicy_cache")]
        for name in names:
            path = Path(directory, name)
            files[str(path.relative_to(repo))] = (
                hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode
            )
    return {
        "files": files,
        "index": hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
        "HEAD": (repo / ".git" / "HEAD").read_text(),
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "stash": git(repo, "stash", "list", "--format=%H %s"),
        "status": git(repo, "status", "--porcelain=v2", "--branch", "--untracked-files=all"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
    }


def _dirty(repo: Path) -> None:
    """A stash entry, a staged change, an unstaged change and an untracked file."""
    (repo / "src/pkg/ops/layernorm.py").write_text("def rms_norm(x):\n    return 2 * x\n")
    git(repo, "stash", "push", "-q", "-m", "work in progress")
    (repo / "src/pkg/__init__.py").write_text("STAGED = 1\n")
    git(repo, "add", "src/pkg/__init__.py")
    (repo / "src/pkg/ops/__init__.py").write_text("# unstaged edit\n")
    (repo / "scratch.py").write_text("import pkg.ops\n")


def test_never_touches_the_working_tree_index_head_or_stash(incident: tuple[Path, str, str]) -> None:
    repo, good, _ = incident
    git(repo, "checkout", "-q", "HEAD~3")  # a detached HEAD inside the range
    _dirty(repo)
    before = _state(repo)
    done = bisect(repo, "--good", good, "--bad", "main")
    assert done.returncode == 0, done.stderr
    assert _state(repo) == before


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_an_interrupted_run_leaves_the_repository_as_it_was(
    tmp_path: Path, signum: int
) -> None:
    repo = make_repo(tmp_path / "repo")
    good = git(repo, "rev-parse", "HEAD")
    for number in range(40):  # enough commits that the run is still going when the signal comes
        body = "".join(f"def f{i}():\n    return {i}\n" for i in range(number * 20))
        commit(repo, f"grow {number}", {f"src/pkg/grow{number}.py": body})
    commit(repo, "re-export", {"src/pkg/ops/__init__.py": REEXPORT})
    _dirty(repo)
    before = _state(repo)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "flake8_importpolicy", "bisect", "--no-cache", "--good", good,
         "--bad", "main"],
        cwd=repo, env={**os.environ, "TMPDIR": str(scratch)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    # the signal comes once the mirror exists (the run is then reading trees); a run that ended
    # first would fail the exit status check below, never pass it vacuously
    while not any(scratch.glob("importpolicy-bisect-*/tree/src")) and process.poll() is None:
        time.sleep(0.002)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=HANG_CATCHER)
    if signum == signal.SIGKILL:
        assert process.returncode == -signal.SIGKILL
    else:
        assert process.returncode == 130, stderr
        assert "bisect interrupted; nothing in the repository was changed" in stderr
        assert not list(scratch.iterdir())  # the temporary tree is removed too
    assert _state(repo) == before


def test_a_temporary_directory_without_room_is_said_not_called_a_bug(incident: tuple[Path, str, str]) -> None:
    """Issue 27: a full ``TMPDIR`` (here a file-size limit, ``ulimit -f``, which fails a write as
    ENOSPC does: Python ignores SIGXFSZ) ended bisect as an internal error, exit 3, "a bug in
    importpolicy"; it is an error of the environment, said with where and what to do, exit 2,
    the temporary tree removed."""
    import resource

    repo, good, _ = incident
    write(repo, {"src/pkg/ops/big.py": "X = 1\n" + "# padding\n" * 2000})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a big module")
    scratch = repo.parent / "tmp"
    scratch.mkdir()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

    done = subprocess.run(
        [sys.executable, "-m", "flake8_importpolicy", "bisect", "--no-cache", "--good", good],
        cwd=repo, env={**os.environ, "TMPDIR": str(scratch)}, capture_output=True, text=True,
        timeout=HANG_CATCHER, preexec_fn=limit)
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr
    assert done.stderr.startswith(f"importpolicy: cannot write the commit's files under {scratch}/"
                                  "importpolicy-bisect-"), done.stderr
    assert "File too large (bisect mirrors the source roots" in done.stderr, \
        done.stderr
    assert "set TMPDIR to a directory with room" in done.stderr
    assert not list(scratch.iterdir())


def test_a_commit_where_the_light_module_is_missing_or_does_not_parse_is_skipped(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    good = git(repo, "rev-parse", "HEAD")
    noise(repo, 2)
    missing = commit(repo, "move ops away", OPS_GONE)
    commit(repo, "ops back", {name: BASE[name] for name in OPS_GONE})
    broken = commit(repo, "ops: a typo", {"src/pkg/ops/__init__.py": "from .layernorm import (x\n"})
    commit(repo, "ops: fix the typo", {"src/pkg/ops/__init__.py": BASE["src/pkg/ops/__init__.py"]})
    culprit = commit(repo, "re-export fused", {"src/pkg/ops/__init__.py": REEXPORT})
    noise(repo, 3, start=2)
    done = bisect(repo, "--good", good, "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["findings"][0]["commit"]["hash"] == culprit
    reasons = {entry["commit"]["hash"]: entry["reason"] for entry in data["skipped"]}
    assert reasons[broken] == "src/pkg/ops/__init__.py: line 1: '(' was never closed"
    assert reasons.get(missing, "light module pkg.ops does not exist") == (
        "light module pkg.ops does not exist")


OPS_GONE: dict[str, str | None] = {
    "src/pkg/ops/__init__.py": None, "src/pkg/ops/layernorm.py": None, "src/pkg/ops/fused.py": None,
}


def test_skips_that_leave_the_answer_open_name_the_candidates(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    good = git(repo, "rev-parse", "HEAD")
    commit(repo, "drop ops", OPS_GONE)
    commit(repo, "still no ops")
    commit(repo, "ops back with the re-export",
           {**{name: BASE[name] for name in OPS_GONE}, "src/pkg/ops/__init__.py": REEXPORT})
    done = bisect(repo, "--good", good)
    assert done.returncode == 1, done.stderr
    assert "skipped commits leave the first commit open; it is one of:" in done.stdout
    assert "light module pkg.ops does not exist" in done.stdout


def test_all_parents_follows_the_merged_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    good = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "feature")
    noise(repo, 2)
    culprit = commit(repo, "feature: re-export fused", {"src/pkg/ops/__init__.py": REEXPORT})
    noise(repo, 2, start=2)
    git(repo, "checkout", "-q", "main")
    noise(repo, 3, start=10)
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge branch feature", "feature")
    merge = git(repo, "rev-parse", "HEAD")
    first_parent = json.loads(bisect(repo, "--good", good, "--format", "json").stdout)
    assert first_parent["findings"][0]["commit"]["hash"] == merge
    assert first_parent["first_parent"] is True
    done = bisect(repo, "--good", good, "--all-parents", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["findings"][0]["commit"]["hash"] == culprit
    assert data["commits"] == 9


def test_a_budget_finding_is_searched_too(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    commit(repo, "budget", {"policy.toml": POLICY + "max-modules = 4\n"})
    good = git(repo, "rev-parse", "HEAD")
    noise(repo, 2)
    culprit = commit(repo, "ops: more kernels", {
        "src/pkg/ops/__init__.py": "from .layernorm import rms_norm\nfrom . import a, b, c\n",
        "src/pkg/ops/a.py": "", "src/pkg/ops/b.py": "", "src/pkg/ops/c.py": "",
    })
    done = bisect(repo, "--good", good, "--format", "json")
    assert done.returncode == 0, done.stderr
    [finding] = json.loads(done.stdout)["findings"]
    assert (finding["code"], finding["heavy"]) == ("IPL008", "max-modules=4")
    assert finding["commit"]["hash"] == culprit
    assert (finding["added"]["path"], finding["added"]["line"]) == ("src/pkg/ops/__init__.py", 2)


def test_the_statement_a_budget_commit_added_is_named_also_deeper_in_the_closure(
    tmp_path: Path,
) -> None:
    """An IPL008 has no chain, and bisect named no statement for it (issue 27, F11): now it is
    the statement of the counted closure that the commit's diff adds, here in a module the light
    module imports, below a line the commit kept."""
    repo = make_repo(tmp_path / "repo")
    commit(repo, "budget", {"policy.toml": POLICY + "max-modules = 4\n",
                            "src/pkg/ops/a.py": "", "src/pkg/ops/b.py": "", "src/pkg/ops/c.py": ""})
    good = git(repo, "rev-parse", "HEAD")
    noise(repo, 2)
    culprit = commit(repo, "layernorm: helpers", {
        "src/pkg/ops/layernorm.py": "def rms_norm(x):\n    return x\n\nfrom . import a, b, c\n",
    })
    noise(repo, 2, start=2)
    done = bisect(repo, "--good", good)
    assert done.returncode == 0, done.stderr
    assert f"first commit: {culprit[:12]} layernorm: helpers" in done.stdout
    assert ("it added: src/pkg/ops/layernorm.py:4: pkg.ops.layernorm -> pkg.ops.a (from-import)"
            in done.stdout)


def test_nothing_new_in_the_range_exits_1(incident: tuple[Path, str, str]) -> None:
    repo, _, culprit = incident
    done = bisect(repo, "--good", culprit)
    assert done.returncode == 1
    assert "no finding at --bad" in done.stdout
    named = bisect(repo, "--good", culprit, "pkg.ops", "--format", "json")
    assert named.returncode == 1
    assert json.loads(named.stdout)["findings"][0]["status"] == "at-good"


def test_a_named_light_module_without_a_finding_at_bad_is_said_so(incident: tuple[Path, str, str]) -> None:
    """Issue 27: a light module named that shows no finding at ``--bad`` printed ``IPL001 pkg.ops
    -> `` (an arrow to nothing: there is no forbidden module to name); now the light module and
    why, exit 1, and JSON's status ``not-at-bad``."""
    repo, good, _ = incident
    done = bisect(repo, "--good", good, "--bad", good, "pkg.ops")
    assert done.returncode == 1, done.stderr
    assert "IPL001 pkg.ops\n  no finding of this light module at --bad\n" in done.stdout, done.stdout
    assert "->" not in done.stdout
    named = bisect(repo, "--good", good, "--bad", good, "pkg.ops", "--format", "json")
    assert json.loads(named.stdout)["findings"][0]["status"] == "not-at-bad"


def test_the_policy_at_bad_is_used_unless_policy_is_given(incident: tuple[Path, str, str]) -> None:
    repo, good, _ = incident
    (repo / "policy.toml").write_text(POLICY.replace('"pkg.config"', '"pkg.other"'))
    done = bisect(repo, "--good", good)
    assert done.returncode == 0, done.stderr  # the working tree's edit does not count
    mine = bisect(repo, "--good", good, "--policy", "policy.toml")
    assert mine.returncode == 1
    assert "policy: policy.toml from --policy (the file on disk)" in mine.stdout


@pytest.mark.parametrize("args, message", [
    (["--good", "no-such-rev"], "--good 'no-such-rev' names no commit of "),
    (["--good", "HEAD~1", "--bad", "HEAD^{tree}"], "--bad 'HEAD^{tree}' names no commit of "),
    (["--good", "HEAD", "--bad", "HEAD~1"], "is not an ancestor of --bad"),
    (["--good", "HEAD~1", "not.light"], "'not.light' is not a light module of policy.toml"),
    (["--good", "HEAD~1", "--policy", "/etc/hostname"], "not a file of the repository"),
])
def test_usage_errors_exit_2(incident: tuple[Path, str, str], args: list[str], message: str) -> None:
    repo, _, _ = incident
    done = bisect(repo, *args)
    assert done.returncode == 2, done.stdout
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_not_a_git_repository_exits_2(tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text(POLICY)
    done = bisect(tmp_path, "--good", "HEAD", cwd=tmp_path)
    assert done.returncode == 2
    assert "is not inside a git repository" in done.stderr


def test_a_bare_repository_exits_2_saying_so(incident: tuple[Path, str, str], tmp_path: Path) -> None:
    """A bare repository was called "not inside a git repository"; it is one, without a working
    tree to start from (issue 27, F12)."""
    repo, good, _ = incident
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    for where in (bare, bare / "refs"):
        done = bisect(bare, "--good", good, cwd=where)
        assert done.returncode == 2, done.stdout
        assert done.stderr == (f"importpolicy: {bare} is a bare repository (it has no working tree, "
                               "so no source roots or policy to start from); run importpolicy bisect "
                               f"in a clone with a working tree (git clone {bare})\n")


SHALLOW_NOTE = (" is a shallow clone, and the history beyond its shallow boundary is not there: "
                "deepen it (git fetch --unshallow, or git fetch --deepen=N) and run again\n")


def test_good_beyond_the_shallow_boundary_exits_2_saying_so(
    incident: tuple[Path, str, str], tmp_path: Path,
) -> None:
    """In a shallow clone, a --good beyond the boundary was "names no commit" or "not an ancestor",
    as if the revision were wrong; the message says the clone is shallow and how to deepen it."""
    repo, good, _ = incident
    git(repo, "branch", "old", good)
    shallow, fetched = tmp_path / "shallow", tmp_path / "fetched"
    git(tmp_path, "clone", "-q", "--depth", "3", f"file://{repo}", str(shallow))
    git(tmp_path, "clone", "-q", "--depth", "3", "--no-single-branch", f"file://{repo}", str(fetched))
    missing = bisect(shallow, "--good", good)
    assert missing.returncode == 2, missing.stdout
    assert missing.stderr == (f"importpolicy: --good {good!r} names no commit of {shallow}; {shallow}"
                              + SHALLOW_NOTE)
    cut = bisect(fetched, "--good", "origin/old")  # the commit is there, its descendants are not
    assert cut.returncode == 2, cut.stdout
    assert cut.stderr == (f"importpolicy: --good origin/old ({good[:12]}) is not an ancestor of --bad "
                          f"HEAD ({git(repo, 'rev-parse', 'HEAD')[:12]}); {fetched}" + SHALLOW_NOTE)


def test_a_range_that_reaches_the_shallow_boundary_exits_2(tmp_path: Path) -> None:
    """With --all-parents, a merged branch cut by the shallow boundary starts with a commit
    whose parents the clone lacks: it passed for the first one of the range, a wrong answer."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, "feature: re-export fused", {"src/pkg/ops/__init__.py": REEXPORT})
    noise(repo, 1)
    git(repo, "checkout", "-q", "main")
    noise(repo, 1, start=10)
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge branch feature", "feature")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{repo}", str(shallow))
    feature_tip = git(repo, "rev-parse", "feature")
    done = bisect(shallow, "--good", "HEAD^1", "--all-parents")
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith("importpolicy: the range ")
    assert f"reaches the shallow boundary at {feature_tip[:12]}, whose parents are not in the clone; " \
        in done.stderr
    assert done.stderr.endswith(f"{shallow}" + SHALLOW_NOTE)


def test_a_source_root_outside_the_repository_is_a_usage_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    commit(repo, "absolute root", {"policy.toml": POLICY.replace('["src"]', f'["{tmp_path}"]')})
    done = bisect(repo, "--good", "HEAD~1")
    assert done.returncode == 2
    assert "is outside the repository" in done.stderr


def test_the_search_tests_the_commit_that_halves_the_candidates() -> None:
    order = [f"c{i}" for i in range(16)]
    parents = {c: (order[i - 1],) if i else () for i, c in enumerate(order)}
    tested: list[str] = []

    def judge(commit: str) -> bool:
        tested.append(commit)
        return order.index(commit) >= 11

    assert search_first_bad(order, parents, "c15", judge) == ["c11"]
    assert len(tested) == 4  # log2(16)


def test_going_to_another_commit_rewrites_only_the_blobs_that_differ(tmp_path: Path) -> None:
    from flake8_importpolicy.history.git import GitRepository, TreeMirror

    repo = make_repo(tmp_path / "repo")
    first = git(repo, "rev-parse", "HEAD")
    second = commit(repo, "re-export", {"src/pkg/ops/__init__.py": REEXPORT,
                                        "src/pkg/ops/fused.py": None})
    mirror_root = tmp_path / "mirror"
    mirror_root.mkdir()
    with GitRepository(repo) as repository:
        mirror = TreeMirror(repository, mirror_root.resolve(), ["src"])
        mirror.switch(first)
        kept = (mirror_root / "src/pkg/config.py").stat()
        mirror.switch(second)
        again = (mirror_root / "src/pkg/config.py").stat()
        assert (again.st_ino, again.st_mtime_ns) == (kept.st_ino, kept.st_mtime_ns)
        assert (mirror_root / "src/pkg/ops/__init__.py").read_text() == REEXPORT
        assert not (mirror_root / "src/pkg/ops/fused.py").exists()
        assert not (mirror_root / "policy.toml").exists()  # outside the prefixes
        mirror.switch(first)
        assert (mirror_root / "src/pkg/ops/__init__.py").read_text() == BASE["src/pkg/ops/__init__.py"]
        assert (mirror_root / "src/pkg/ops/fused.py").read_text() == BASE["src/pkg/ops/fused.py"]


def test_a_second_search_is_answered_from_the_facts_cache(incident: tuple[Path, str, str]) -> None:
    repo, good, _ = incident
    assert bisect(repo, "--good", good).returncode == 0
    facts = repo / ".importpolicy_cache" / "facts"
    entries = sorted(p.name for p in facts.rglob("*.json"))
    assert entries  # every file of every commit checked, keyed by its bytes
    assert bisect(repo, "--good", good).returncode == 0
    assert sorted(p.name for p in facts.rglob("*.json")) == entries  # nothing new was parsed


def test_a_forbidden_submodule_counts_as_its_pattern(tmp_path: Path) -> None:
    from flake8_importpolicy.history.bisect import _checked
    from flake8_importpolicy.config.load import policy_from_text
    from flake8_importpolicy.model.findings import Report, Violation

    (tmp_path / "src").mkdir()
    policy = policy_from_text(POLICY.replace('"pkg.config" =', '"pkg.other" = "x"\n"pkg.config" ='),
                              tmp_path / "policy.toml")
    violation = Violation("pkg.ops", "pkg.config.cuda", "pkg.config", "r", tmp_path / "x.py", 1, 0,
                          "import", ("pkg.config.other", "pkg.other.deep"), ())
    found = _checked(Report((violation,), ()), tmp_path, policy).findings
    assert sorted(found) == [("IPL001", "pkg.ops", "pkg.config"), ("IPL001", "pkg.ops", "pkg.other")]


def test_searches_share_the_commits_another_search_checked() -> None:
    order = [f"c{i}" for i in range(32)]
    parents = {c: (order[i - 1],) if i else () for i, c in enumerate(order)}
    first: list[str] = []
    verdicts: dict[str, bool] = {}

    def judge_a(commit: str) -> bool:
        first.append(commit)
        verdicts[commit] = order.index(commit) >= 20
        return verdicts[commit]

    assert search_first_bad(order, parents, "c31", judge_a) == ["c20"]
    second: list[str] = []

    def judge_b(commit: str) -> bool:
        second.append(commit)
        return order.index(commit) >= 21

    def known(commit: str) -> bool | None:  # what checking a's commits told about b's finding
        return None if commit == "c20" else verdicts.get(commit)

    assert search_first_bad(order, parents, "c31", judge_b, known) == ["c21"]
    assert second == ["c20"]  # the one commit a's search did not settle for b


def test_the_incident_walk_bisect_then_fix_then_check(incident: tuple[Path, str, str]) -> None:
    """docs/bisect-and-fix.md's walk on a git repository: bisect names the commit, fix's diff is
    what --apply writes (git diff shows the same change), check is clean afterwards."""
    repo, good, culprit = incident
    commit(repo, "use the kernel", {"src/pkg/worker.py": "from pkg.ops import fused\n\nSTEP = fused\n"})
    found = json.loads(bisect(repo, "--good", good, "--format", "json").stdout)
    assert found["findings"][0]["commit"]["hash"] == culprit

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "flake8_importpolicy", *args], cwd=repo,
                              capture_output=True, text=True, timeout=HANG_CATCHER)

    shown = run("fix", "--kind", "direct")
    assert shown.returncode == 0, shown.stderr
    assert run("fix", "--kind", "direct", "--apply").returncode == 0
    assert _same_change(git(repo, "diff", "--no-color"), shown.stdout)
    assert run("check").returncode == 0
    assert (repo / "src/pkg/worker.py").read_text().startswith("from pkg.ops.fused import fused\n")


def _same_change(git_diff: str, ours: str) -> bool:
    """The two diffs change the same lines (git's has index lines and hunk context of its own)."""
    def changed(text: str) -> list[str]:
        return [line for line in text.splitlines()
                if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    return changed(git_diff) == changed(ours)


@pytest.mark.parametrize("root", ["my src", "src\\tab", 'src"q', "src\u00e9"])
def test_the_hop_it_added_under_a_source_root_git_quotes_or_ends_with_a_tab(
    tmp_path: Path, root: str
) -> None:
    # git diff ends a +++ header with a TAB when the name has a space, and C-quotes a name with a
    # backslash or a double quote in it
    repo = make_repo(tmp_path / "repo")
    files = {name.replace("src/", f"{root}/", 1): text for name, text in BASE.items()
             if name.startswith("src/")}
    files["policy.toml"] = POLICY.replace('"src"', json.dumps(root))
    good = commit(repo, "move", {**{n: None for n in BASE if n.startswith("src/")}, **files})
    noise(repo, 2)
    culprit = commit(repo, "ops: re-export", {f"{root}/pkg/ops/__init__.py": REEXPORT})
    noise(repo, 2, start=2)
    done = bisect(repo, "--good", good)
    assert done.returncode == 0, done.stderr
    assert f"first commit: {culprit[:12]} ops: re-export" in done.stdout
    assert (f"it added: {root}/pkg/ops/__init__.py:2: pkg.ops -> pkg.ops.fused (from-import)"
            in done.stdout), done.stdout


def test_it_added_names_the_new_statement_not_an_old_one_the_commit_touched(tmp_path: Path) -> None:
    """Issue 27, F-I: the commit that makes pkg.ops reach pkg.config adds ``from pkg.config import
    CUDA`` to fused.py and only appends a comment to the old re-export line of pkg/ops/__init__.py;
    "it added" names the new statement, not the re-export the diff merely touched."""
    repo = make_repo(tmp_path / "repo")
    commit(repo, "ops: re-export fused", {
        "src/pkg/ops/__init__.py": REEXPORT, "src/pkg/ops/fused.py": "def fused(x):\n    return x\n",
    })
    good = git(repo, "rev-parse", "HEAD")
    noise(repo, 2)
    culprit = commit(repo, "fused: read the CUDA flag", {
        "src/pkg/ops/__init__.py": "from .layernorm import rms_norm\nfrom .fused import fused  # public\n",
        "src/pkg/ops/fused.py": "from pkg.config import CUDA\n\n\ndef fused(x):\n    return x\n",
    })
    noise(repo, 2, start=2)
    done = bisect(repo, "--good", good)
    assert done.returncode == 0, done.stderr
    assert f"first commit: {culprit[:12]} fused: read the CUDA flag" in done.stdout
    assert ("it added: src/pkg/ops/fused.py:1: pkg.ops.fused -> pkg.config (from-import)"
            in done.stdout), done.stdout


def test_it_added_names_a_multi_line_statement_the_commit_grew_by_a_line(tmp_path: Path) -> None:
    """Issue 27: the commit adds ``    fused,`` inside the parentheses of the old ``from . import (``
    (isort's and black's wrapped style): the hop pkg.ops -> pkg.ops.fused is the statement's, at
    its first line, which the diff does not add; bisect said "it added no statement of the chain"
    where the commit added the import."""
    repo = make_repo(tmp_path / "repo")
    commit(repo, "ops: wrapped import", {"src/pkg/ops/__init__.py": "from . import (\n    layernorm,\n)\n"})
    good = git(repo, "rev-parse", "HEAD")
    noise(repo, 2)
    culprit = commit(repo, "ops: also fused", {
        "src/pkg/ops/__init__.py": "from . import (\n    layernorm,\n    fused,\n)\n"})
    noise(repo, 2, start=2)
    done = bisect(repo, "--good", good)
    assert done.returncode == 0, done.stderr
    assert f"first commit: {culprit[:12]} ops: also fused" in done.stdout
    assert ("it added: src/pkg/ops/__init__.py:1: pkg.ops -> pkg.ops.fused (from-import)"
            in done.stdout), done.stdout


def test_a_commit_that_only_touched_the_chains_statements_added_none(tmp_path: Path) -> None:
    """Issue 27, F-I: when the commit's diff touches the chain's statements only (a comment on the
    old re-export line) and the chain shows because of something else (here the ``if`` above the
    old ``from pkg.config import CUDA`` now holds on every target version), bisect does not claim
    it added the touched line."""
    repo = make_repo(tmp_path / "repo")
    fused = "import sys\n\nif sys.version_info {}:\n    from pkg.config import CUDA\n"
    commit(repo, "ops: re-export fused", {"src/pkg/ops/__init__.py": REEXPORT,
                                          "src/pkg/ops/fused.py": fused.format("< (3,)")})
    good = git(repo, "rev-parse", "HEAD")
    culprit = commit(repo, "fused: the flag on Python 3", {
        "src/pkg/ops/fused.py": fused.format(">= (3,)"),
        "src/pkg/ops/__init__.py": "from .layernorm import rms_norm\nfrom .fused import fused  # api\n",
    })
    done = bisect(repo, "--good", good, "pkg.ops")
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"first commit: {culprit[:12]} fused: the flag on Python 3" in done.stdout
    assert "it added:" not in done.stdout
    assert "it added no statement of the chain" in done.stdout


def test_a_budget_commit_names_the_statement_it_added_not_one_it_touched(tmp_path: Path) -> None:
    """Issue 27, F-I for IPL008: the commit appends a comment to the old ``from . import a, b``
    line and adds ``from . import c`` below it; "it added" names the new statement."""
    repo = make_repo(tmp_path / "repo")
    commit(repo, "budget", {"policy.toml": POLICY + "max-modules = 4\n",
                            "src/pkg/ops/a.py": "", "src/pkg/ops/b.py": "", "src/pkg/ops/c.py": "",
                            "src/pkg/ops/__init__.py": "from . import a, b\n"})
    good = git(repo, "rev-parse", "HEAD")
    noise(repo, 2)
    culprit = commit(repo, "ops: c", {
        "src/pkg/ops/__init__.py": "from . import a, b  # kernels\nfrom . import c\n",
    })
    done = bisect(repo, "--good", good, "--format", "json")
    assert done.returncode == 0, done.stderr
    [finding] = json.loads(done.stdout)["findings"]
    assert (finding["code"], finding["commit"]["hash"]) == ("IPL008", culprit)
    assert (finding["added"]["path"], finding["added"]["line"]) == ("src/pkg/ops/__init__.py", 2)


def test_a_module_that_is_a_symbolic_link_is_followed(tmp_path: Path) -> None:
    """Issue 27, F-J: pkg/ops/fused.py is a symbolic link to shared/fused.py, outside the source
    roots; check follows it (as Python does) and so does bisect, which names the commit that
    changed the linked file and the statement in it."""
    repo = make_repo(tmp_path / "repo")
    commit(repo, "fused lives in shared/", {
        "src/pkg/ops/__init__.py": REEXPORT, "src/pkg/ops/fused.py": None,
        "shared/fused.py": "def fused(x):\n    return x\n",
    })
    os.symlink("../../../shared/fused.py", repo / "src/pkg/ops/fused.py")
    good = commit(repo, "ops: link fused")
    noise(repo, 2)
    culprit = commit(repo, "fused: read the CUDA flag",
                     {"shared/fused.py": "from pkg.config import CUDA\n"})
    noise(repo, 2, start=2)
    checked = subprocess.run([sys.executable, "-m", "flake8_importpolicy", "check"], cwd=repo,
                             capture_output=True, text=True, timeout=HANG_CATCHER)
    assert "IPL001" in checked.stdout
    done = bisect(repo, "--good", good)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"first commit: {culprit[:12]} fused: read the CUDA flag" in done.stdout
    assert "it added: shared/fused.py:1: pkg.ops.fused -> pkg.config (from-import)" in done.stdout


def test_a_source_root_that_is_a_symbolic_link_is_followed(tmp_path: Path) -> None:
    """Issue 27: the source root src/ is a committed symbolic link to lib/ (the sources moved, the
    old name kept); check reads it, and bisect stopped with 'settings.source-roots[0]: "src" is
    not a directory', exit 2, since the policy was first read from a mirror of the .toml files
    alone, without the link."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "mv", "src", "lib")
    os.symlink("lib", repo / "src")
    good = commit(repo, "move the sources to lib/, src/ a link to it")
    noise(repo, 2)
    culprit = commit(repo, "ops: re-export fused", {"lib/pkg/ops/__init__.py": REEXPORT})
    noise(repo, 2, start=2)
    checked = subprocess.run([sys.executable, "-m", "flake8_importpolicy", "check"], cwd=repo,
                             capture_output=True, text=True, timeout=HANG_CATCHER)
    assert "IPL001" in checked.stdout
    done = bisect(repo, "--good", good)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"first commit: {culprit[:12]} ops: re-export fused" in done.stdout
    assert "it added: lib/pkg/ops/__init__.py:2: pkg.ops -> pkg.ops.fused (from-import)" in done.stdout


def test_a_submodule_or_a_link_out_of_the_repository_is_not_a_silent_no_finding(
    tmp_path: Path,
) -> None:
    """Issue 27, F-J: bisect reads this repository's objects; a submodule's files (and a link to
    outside the repository) are not among them. When nothing is found it says what it could not
    read and exits 2, where it said "no finding" and exited 1."""
    sub = make_repo(tmp_path / "sub")
    commit(sub, "vendored kernels", {"__init__.py": "from pkg.config import CUDA\n"})
    repo = make_repo(tmp_path / "repo")
    good = git(repo, "rev-parse", "HEAD")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub),
        "src/pkg/ops/vendored")
    os.symlink("/nonexistent/elsewhere.py", repo / "src/pkg/ops/elsewhere.py")
    commit(repo, "ops: vendored kernels", {
        "src/pkg/ops/__init__.py": "from .layernorm import rms_norm\nfrom . import vendored\n",
    })
    checked = subprocess.run([sys.executable, "-m", "flake8_importpolicy", "check"], cwd=repo,
                             capture_output=True, text=True, timeout=HANG_CATCHER)
    assert "IPL001" in checked.stdout  # the working tree has the submodule's files
    done = bisect(repo, "--good", good)
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("src/pkg/ops/vendored: a git submodule: its files are objects of another repository"
            in done.stdout)
    assert ("src/pkg/ops/elsewhere.py: a symbolic link to /nonexistent/elsewhere.py, outside the "
            "repository" in done.stdout)
    assert "bisect cannot read" in done.stdout
    data = json.loads(bisect(repo, "--good", good, "--format", "json").stdout)
    assert [entry["path"] for entry in data["unreadable"]] == ["src/pkg/ops/elsewhere.py",
                                                               "src/pkg/ops/vendored"]


def _walk_commands(page: str) -> list[tuple[str, str]]:
    """``(command, the output the page shows)`` of every ``$ importpolicy ...`` line of the console
    blocks of docs/bisect-and-fix.md's walk, in order."""
    import re

    walk = page[page.index("## The incident, as a walk"):page.index("## `importpolicy bisect`")]
    found: list[tuple[str, str]] = []
    for block in re.findall(r"```console\n(.*?)```", walk, re.S):
        command: str | None = None
        output: list[str] = []
        for line in block.splitlines(keepends=True):
            if line.startswith("$ "):
                if command is not None:
                    found.append((command, "".join(output)))
                command, output = line[2:].strip(), []
            else:
                output.append(line)
        if command is not None:
            found.append((command, "".join(output)))
    return [(command, output) for command, output in found if command.startswith("importpolicy ")]


def test_the_docs_walk_repository_is_built_and_its_commands_print_what_the_page_shows(
    tmp_path: Path,
) -> None:
    """Issue 27: docs/bisect-and-fix.md walks through a repository nobody could rebuild.
    examples/bisect_walk/make_repo.py builds it (fixed authors and dates: the page's hashes), and
    each ``importpolicy`` command of the walk prints, stdout then stderr, what the page shows;
    bisect leaves the uncommitted work alone."""
    import shlex

    top = Path(__file__).resolve().parent.parent
    page = (top / "docs/bisect-and-fix.md").read_text(encoding="utf-8")
    assert "python examples/bisect_walk/make_repo.py /tmp/inferno" in page
    repo = tmp_path / "inferno"
    made = subprocess.run([sys.executable, str(top / "examples/bisect_walk/make_repo.py"), str(repo)],
                          capture_output=True, text=True, timeout=HANG_CATCHER)
    assert made.returncode == 0, made.stderr
    policy = page[page.index("```toml\n") + len("```toml\n"):]
    assert (repo / "policy.toml").read_text() == policy[:policy.index("```")]
    commands = _walk_commands(page)
    assert [c for c, _ in commands] == ["importpolicy check", "importpolicy bisect --good v1.0",
                                        "importpolicy fix", "importpolicy fix --kind direct",
                                        "importpolicy fix --apply", "importpolicy check"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    status = git(repo, "status", "--porcelain", "--untracked-files=all")
    for command, shown in commands:
        done = subprocess.run([sys.executable, "-m", "flake8_importpolicy",
                               *shlex.split(command)[1:]], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=HANG_CATCHER)
        assert done.returncode in (0, 1), (command, done.stderr)
        assert done.stdout + done.stderr == shown, command
        if command.startswith("importpolicy bisect"):
            assert git(repo, "status", "--porcelain", "--untracked-files=all") == status
