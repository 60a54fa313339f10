"""Reading a repository's history through the git binary, never touching the user's checkout.

Everything here reads objects: ``git rev-parse``, ``rev-list``, ``ls-tree``, ``diff`` between two
trees and one long-running ``git cat-file --batch`` for file contents (gitrevisions(7),
git-cat-file(1)). Nothing checks out, writes the index, moves HEAD or stashes, and every command
runs with ``--no-optional-locks`` (git(1): no lock on the index is taken, not even to refresh it),
so the working tree, the index, HEAD and the stash of the repository stay as they were, also when a
run is interrupted.

:class:`TreeMirror` writes the files of one commit into a private temporary directory, by blob id:
going from one commit to another rewrites only the files whose blob changed, and the engine reads
the directory as it would a checkout (its facts cache is keyed by the bytes' SHA-256, so every
commit that shares a file shares its facts).
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from flake8_importpolicy.model.history import Commit, HistoryError

__all__ = ["GitRepository", "TreeEntry", "TreeMirror"]

_GIT = ("git", "--no-optional-locks", "--literal-pathspecs", "-c", "core.quotePath=false")
_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


@dataclass(frozen=True)
class TreeEntry:
    """One file of a commit's tree (git-ls-tree(1)): ``mode`` (``100644``, ``100755``, ``120000`` for
    a symbolic link, ``160000`` for a submodule) and the object id of its blob."""

    mode: str
    oid: str


class GitRepository:
    """A git repository, read through the ``git`` binary.

    Args:
        start: a directory inside the repository's working tree.

    Attributes:
        top: the top directory of the working tree (absolute, resolved).

    Raises:
        HistoryError: ``start`` is not inside a git working tree, or git cannot be run.
    """

    def __init__(self, start: Path) -> None:
        self._batch: subprocess.Popen[bytes] | None = None
        try:
            done = subprocess.run(
                [*_GIT, "-C", str(start), "rev-parse", "--show-toplevel"],
                capture_output=True, stdin=subprocess.DEVNULL,
            )
        except OSError as exc:
            raise HistoryError(f"cannot run git: {exc.strerror or exc}") from None
        if done.returncode != 0:
            if _ask(start, "--is-bare-repository") == b"true":
                bare = os.fsdecode(_ask(start, "--absolute-git-dir")) or start
                raise HistoryError(
                    f"{bare} is a bare repository (it has no working tree, so no source roots "
                    "or policy to start from); run importpolicy bisect in a clone with a working "
                    f"tree (git clone {bare})")
            raise HistoryError(f"{start} is not inside a git repository (git rev-parse: "
                               f"{_first_line(done.stderr)})")
        self.top = Path(os.fsdecode(done.stdout.rstrip(b"\n"))).resolve()
        self._boundary: frozenset[str] | None = None

    def close(self) -> None:
        """Stop the ``git cat-file`` process, if one was started."""
        batch, self._batch = self._batch, None
        if batch is not None:
            try:
                if batch.stdin is not None:
                    batch.stdin.close()
                batch.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                batch.kill()
                batch.wait()
            finally:
                if batch.stdout is not None:
                    batch.stdout.close()

    def __enter__(self) -> GitRepository:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def shallow_boundary(self) -> frozenset[str]:
        """The commits at the shallow boundary of a shallow clone, whose parents the clone does
        not have (the ``shallow`` file of the git directory, gitrepository-layout(5)); empty for a
        complete repository."""
        if self._boundary is None:
            found: frozenset[str] = frozenset()
            if _ask(self.top, "--is-shallow-repository") == b"true":
                shallow = Path(os.fsdecode(_ask(self.top, "--git-path", "shallow")))
                try:
                    text = (shallow if shallow.is_absolute() else self.top / shallow).read_text()
                except OSError:
                    text = ""
                found = frozenset(text.split())
            self._boundary = found
        return self._boundary

    def shallow_note(self) -> str:
        """What to add to a message about a commit the history does not lead to: in a shallow
        clone, that the commit may be beyond the shallow boundary and how to deepen it; else
        nothing."""
        if not self.shallow_boundary():
            return ""
        return (f"; {self.top} is a shallow clone, and the history beyond its shallow boundary is "
                "not there: deepen it (git fetch --unshallow, or git fetch --deepen=N) and run "
                "again")

    def _run(self, *args: str) -> bytes:
        done = subprocess.run([*_GIT, "-C", str(self.top), *args], capture_output=True,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise HistoryError(f"git {args[0]} failed: {_first_line(done.stderr)}")
        return done.stdout

    def resolve_commit(self, revision: str, option: str) -> Commit:
        """The commit a revision names (``HEAD~3``, a tag, a hash).

        Args:
            revision: the revision (gitrevisions(7)).
            option: the option it was given to, for the message (``"--good"``).

        Raises:
            HistoryError: it names no commit.
        """
        if not revision or revision.startswith("-"):
            raise HistoryError(f"{option} {revision!r} is not a revision")
        done = subprocess.run(
            [*_GIT, "-C", str(self.top), "rev-parse", "--verify", "--quiet", "--end-of-options",
             f"{revision}^{{commit}}"],
            capture_output=True, stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            raise HistoryError(f"{option} {revision!r} names no commit of {self.top}"
                               + self.shallow_note())
        return self.describe(done.stdout.decode().strip())

    def describe(self, commit: str) -> Commit:
        """The commit ``commit`` (a full hash) with its subject line."""
        subject = self._run("log", "-1", "--format=%s", commit, "--").decode("utf-8", "replace")
        return Commit(commit, subject.strip())

    def describe_many(self, commits: Iterable[str]) -> dict[str, Commit]:
        """:meth:`describe` for many commits with one ``git log``."""
        wanted = list(dict.fromkeys(commits))
        if not wanted:
            return {}
        out = self._run("log", "--no-walk=unsorted", "--format=%H%x00%s", *wanted, "--")
        found: dict[str, Commit] = {}
        for line in out.decode("utf-8", "replace").splitlines():
            commit, _, subject = line.partition("\0")
            found[commit] = Commit(commit, subject)
        return found

    def find_range(self, good: str, bad: str, *, first_parent: bool) -> dict[str, tuple[str, ...]]:
        """The commits reachable from ``bad`` and not from ``good`` (``git rev-list good..bad``),
        each with its parents inside that set, parents before children (``--topo-order``).

        Args:
            first_parent: follow only the first parent of a merge (``--first-parent``); else every
                parent, as ``git bisect`` does.

        Raises:
            HistoryError: the range reaches the shallow boundary of a shallow clone (a commit whose
                parents the clone does not have would pass for the first one of the range).
        """
        args = ["rev-list", "--topo-order", "--reverse", "--parents"]
        if first_parent:
            args.append("--first-parent")
        out = self._run(*args, f"^{good}", bad, "--").decode()
        found: dict[str, tuple[str, ...]] = {}
        for line in out.splitlines():
            commit, *parents = line.split()
            if first_parent:
                parents = parents[:1]
            found[commit] = tuple(parents)
        cut = sorted(self.shallow_boundary().intersection(found))
        if cut:
            raise HistoryError(f"the range {good[:12]}..{bad[:12]} reaches the shallow boundary "
                               f"at {cut[0][:12]}, whose parents are not in the clone"
                               + self.shallow_note())
        return {c: tuple(p for p in parents if p in found) for c, parents in found.items()}

    def is_ancestor(self, ancestor: str, commit: str) -> bool:
        """Whether ``ancestor`` is reachable from ``commit`` (``git merge-base --is-ancestor``)."""
        done = subprocess.run(
            [*_GIT, "-C", str(self.top), "merge-base", "--is-ancestor", ancestor, commit],
            capture_output=True, stdin=subprocess.DEVNULL,
        )
        return done.returncode == 0

    def list_tree(self, commit: str, prefixes: Sequence[str] = ()) -> dict[str, TreeEntry]:
        """Every file of ``commit``'s tree under ``prefixes`` (all of it when empty): ``{path
        relative to the top, with / separators: entry}``."""
        out = self._run("ls-tree", "-r", "-z", "--full-tree", commit, "--", *prefixes)
        entries: dict[str, TreeEntry] = {}
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, name = record.partition(b"\t")
            mode, _kind, oid = meta.split(b" ")
            entries[os.fsdecode(name)] = TreeEntry(mode.decode(), oid.decode())
        return entries

    def read_blob(self, oid: str) -> bytes:
        """The bytes of the blob ``oid``, through one long-running ``git cat-file --batch``.

        Raises:
            HistoryError: the object is missing (a shallow or partial clone without it) or not a
                blob.
        """
        batch = self._start_batch()
        assert batch.stdin is not None
        batch.stdin.write(oid.encode() + b"\n")
        batch.stdin.flush()
        return self._read_answer(batch, oid)

    def _start_batch(self) -> subprocess.Popen[bytes]:
        if self._batch is None:
            self._batch = subprocess.Popen(
                [*_GIT, "-C", str(self.top), "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )
        return self._batch

    @staticmethod
    def _read_answer(batch: subprocess.Popen[bytes], oid: str) -> bytes:
        assert batch.stdout is not None
        header = batch.stdout.readline()
        parts = header.split()
        if len(parts) != 3 or parts[1] != b"blob":
            raise HistoryError(f"git cat-file: object {oid} is "
                               f"{header.decode(errors='replace').strip() or 'not readable'}")
        size = int(parts[2])
        data = batch.stdout.read(size + 1)
        return data[:size]

    def read_blobs(self, oids: Sequence[str]) -> dict[str, bytes]:
        """The bytes of many blobs: the ids are written to ``git cat-file --batch`` by a thread
        while the answers are read, so git never waits for a round trip per blob.

        Raises:
            HistoryError: as :meth:`read_blob`.
        """
        wanted = list(dict.fromkeys(oids))
        if len(wanted) < 2:
            return {oid: self.read_blob(oid) for oid in wanted}
        batch = self._start_batch()
        assert batch.stdin is not None and batch.stdout is not None
        stdin = batch.stdin

        def feed() -> None:
            try:
                stdin.write(b"".join(oid.encode() + b"\n" for oid in wanted))
                stdin.flush()
            except OSError:
                pass

        import threading

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        try:
            return {oid: self._read_answer(batch, oid) for oid in wanted}
        finally:
            writer.join()

    def diff_trees(self, old: str, new: str,
                   prefixes: Sequence[str] = ()) -> dict[str, TreeEntry | None]:
        """The files that differ between two commits (``git diff-tree -r``): ``{path: its entry
        in new, or None when new does not have it}``."""
        out = self._run("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old, new, "--",
                        *prefixes)
        changes: dict[str, TreeEntry | None] = {}
        fields = out.split(b"\0")
        for number in range(0, len(fields) - 1, 2):
            meta, name = fields[number], fields[number + 1]
            if not meta.startswith(b":"):
                continue
            _old_mode, new_mode, _old_oid, new_oid, status = meta[1:].split(b" ")
            path = os.fsdecode(name)
            changes[path] = None if status == b"D" else TreeEntry(new_mode.decode(), new_oid.decode())
        return changes

    def find_added_lines(self, parent: str, commit: str,
                         prefixes: Sequence[str] = ()) -> dict[str, list[tuple[int, int]]]:
        """The lines ``commit`` adds relative to ``parent`` (``git diff -U0``): ``{path: [(first
        line, line count), ...]}`` in the commit's numbering, for files under ``prefixes``."""
        out = self._run("diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv",
                        "--no-renames", "--src-prefix=a/", "--dst-prefix=b/", parent, commit, "--",
                        *prefixes)
        added: dict[str, list[tuple[int, int]]] = {}
        current: str | None = None
        for line in out.split(b"\n"):
            if line.startswith(b"+++ "):
                name = _diff_header_path(line[4:])
                current = os.fsdecode(name[2:]) if name.startswith(b"b/") else None
            elif line.startswith(b"@@") and current is not None:
                match = _HUNK.match(line)
                if match is not None:
                    count = int(match.group(2)) if match.group(2) is not None else 1
                    if count:
                        added.setdefault(current, []).append((int(match.group(1)), count))
        return added


_C_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13, b'"': 34,
              b"\\": 92}


def _diff_header_path(name: bytes) -> bytes:
    """The path of a ``+++ `` header line (what follows it): git C-quotes a name with a double
    quote, a backslash or a control character in it (``"b/a\\tb.py"``, octal escapes for bytes),
    and ends the line with a TAB when the name has a space (diff.c, so that patch(1) reads it)."""
    if not name.startswith(b'"'):
        return name[:-1] if name.endswith(b"\t") else name
    out = bytearray()
    index = 1
    while index < len(name) and name[index:index + 1] != b'"':
        char = name[index:index + 1]
        if char != b"\\":
            out += char
            index += 1
            continue
        escape = name[index + 1:index + 2]
        if escape in _C_ESCAPES:
            out.append(_C_ESCAPES[escape])
            index += 2
        else:
            digits = name[index + 1:index + 4]
            if len(digits) != 3 or not all(48 <= d <= 55 for d in digits):
                return name  # not git's quoting: the caller finds no b/ path in it
            out.append(int(digits, 8) & 0xFF)
            index += 4
    return bytes(out)


class TreeMirror:
    """The files of one commit under a private directory, written from git's blobs.

    Python sources (``.py``) are written with their bytes; every other file is written empty (path
    search looks only at names: an extension module, a ``.pyc``, a directory's other files), so a
    directory holds what a checkout of the commit would hold. Going to another commit writes only
    the files whose blob differs (``git diff-tree`` between the two commits) and removes the files
    and the directories that are gone; the blobs are read through one ``git cat-file --batch``,
    pipelined.

    Args:
        repository: where the blobs come from.
        root: an empty private directory (the mirror's top: the repository's top directory).
        prefixes: the paths (relative to the top) to mirror (all of the tree when empty).
        only: when not None, mirror only the files whose names end in one of these (the policy's
            TOML files, before the source roots are known).
    """

    def __init__(self, repository: GitRepository, root: Path, prefixes: Sequence[str] = (),
                 only: tuple[str, ...] | None = None) -> None:
        self.repository = repository
        self.root = root
        self.prefixes = tuple(prefixes)
        self._only = only
        self._files: dict[str, TreeEntry] = {}
        self._directories: dict[str, bool] = {}  # made here: whether it is inside the mirror
        self._links: dict[str, str] = {}  # a symbolic link of the mirror: its text
        self._extras: dict[str, TreeEntry] = {}  # written for a link to outside the prefixes
        self.commit: str | None = None
        self.unreadable: dict[str, str] = {}
        """The paths of the commit's tree (under the prefixes) whose files the mirror cannot
        hold, with why: a submodule (its files are another repository's objects), a symbolic link
        to outside the repository."""

    def narrow(self, prefixes: Sequence[str]) -> None:
        """From the next :meth:`switch` on, mirror every file under ``prefixes`` (and nothing
        outside them: what is there is removed then)."""
        self.prefixes = tuple(prefixes)
        self._only = None
        self.commit = None  # the next switch lists the whole tree

    def switch(self, commit: str) -> None:
        """Make the directory hold ``commit``'s files.

        Raises:
            HistoryError: git fails, or the files cannot be written (no room in the temporary
                directory's file system).
        """
        try:
            self._switch(commit)
        except OSError as exc:
            raise self._write_error(exc) from None

    def put(self, path: str, data: bytes) -> None:
        """Write ``data`` as the file ``path`` (relative to the top) of the mirror, its directories
        made (the policy that is read from ``--policy``, or again after :meth:`narrow`).

        Raises:
            HistoryError: it cannot be written.
        """
        target = self.root / path
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as exc:
            raise self._write_error(exc) from None

    def _write_error(self, exc: OSError) -> HistoryError:
        # a full disk, a file-size or quota limit: the environment's, not a bug (exit 2, not 3)
        return HistoryError(f"cannot write the commit's files under {self.root}: "
                            f"{exc.strerror or exc} (bisect mirrors the source roots of each "
                            "commit it checks in a temporary directory: set TMPDIR to a directory "
                            "with room)")

    def _switch(self, commit: str) -> None:
        if self.commit is not None:
            changes = self.repository.diff_trees(self.commit, commit, self.prefixes)
            gone = [path for path, entry in changes.items() if entry is None and path in self._files]
            wanted = {path: entry for path, entry in changes.items() if entry is not None}
        else:
            wanted = self.repository.list_tree(commit, self.prefixes)
            gone = [path for path in self._files if path not in wanted]
        if self._only is not None:
            # the directories all (a policy's source roots must exist), the files only these, and
            # the symbolic links (a source root may be one: src -> lib)
            for directory in sorted({str(Path(path).parent) for path in wanted}):
                self._directory(directory)
            wanted = {path: entry for path, entry in wanted.items()
                      if path.endswith(self._only) or entry.mode == "120000"}
        for path in gone:
            self._remove(path)
        _prune_directories(self.root, gone)
        writes = [(path, entry) for path, entry in wanted.items() if self._files.get(path) != entry]
        blobs = self.repository.read_blobs(
            [entry.oid for path, entry in writes if entry.mode == "120000" or _has_bytes(path)]
        )
        for path, entry in writes:
            if path in self._files:
                self._remove(path)
            self._write(path, entry, blobs)
        self._follow_links(commit)
        self.commit = commit

    def _mirrored(self, path: str) -> bool:
        return not self.prefixes or any(path == prefix or path.startswith(prefix.rstrip("/") + "/")
                                        for prefix in self.prefixes)

    def _follow_links(self, commit: str) -> None:
        """Write the files a symbolic link of the mirror points to when they are outside the
        prefixes (a module linked from another directory of the repository: the engine follows
        the link as Python does), and name what the mirror cannot hold in :attr:`unreadable`."""
        unreadable: dict[str, str] = {}
        targets: list[str] = []
        for path, entry in sorted(self._files.items()):
            if entry.mode == "160000":
                unreadable[path] = ("a git submodule: its files are objects of another repository, "
                                    "which bisect does not read")
            elif entry.mode == "120000" and path in self._links:
                text = self._links[path]
                target = posixpath.normpath(posixpath.join(posixpath.dirname(path), text))
                if posixpath.isabs(text) or target == ".." or target.startswith("../"):
                    unreadable[path] = (f"a symbolic link to {text}, outside the repository, "
                                        "which bisect does not read")
                elif not self._mirrored(target):
                    targets.append(target)
        wanted = self.repository.list_tree(commit, targets) if targets else {}
        wanted = {path: entry for path, entry in wanted.items() if not self._mirrored(path)}
        for path in [path for path in self._extras if path not in wanted]:
            self._remove_extra(path)
        writes = [(path, entry) for path, entry in wanted.items() if self._extras.get(path) != entry]
        blobs = self.repository.read_blobs(
            [entry.oid for path, entry in writes if entry.mode == "120000" or _has_bytes(path)]
        )
        for path, entry in writes:
            if path in self._extras:
                self._remove_extra(path)
            if entry.mode != "120000":  # one level of links: a link to a link is not followed
                self._write(path, entry, blobs)
                self._extras[path] = self._files.pop(path)
        self.unreadable = unreadable

    def _remove_extra(self, path: str) -> None:
        del self._extras[path]
        try:
            (self.root / path).unlink()
        except OSError:
            pass
        _prune_directories(self.root, [path])

    def _remove(self, path: str) -> None:
        del self._files[path]
        self._links.pop(path, None)
        target = self.root / path
        try:
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()
        except FileNotFoundError:
            pass

    def _directory(self, relative: str) -> bool:
        """Make the directory ``relative`` (and its parents); False when it is not inside the
        mirror (a directory of the tree is a symbolic link: git never writes through one)."""
        known = self._directories.get(relative)
        if known is not None and os.path.isdir(self.root / relative):
            return known
        target = self.root / relative
        target.mkdir(parents=True, exist_ok=True)
        real = os.path.realpath(target)
        inside = real == str(self.root) or real.startswith(str(self.root) + os.sep)
        self._directories[relative] = inside
        return inside

    def _write(self, path: str, entry: TreeEntry, blobs: Mapping[str, bytes]) -> None:
        parts = Path(path).parts
        if ".." in parts or Path(path).is_absolute():
            return  # git refuses such paths in trees; never write outside the mirror
        if not self._directory(str(Path(path).parent)):
            return
        target = self.root / path
        if entry.mode == "160000":  # a submodule: an empty directory, as in a fresh clone
            target.mkdir(exist_ok=True)
        elif entry.mode == "120000":
            text = os.fsdecode(blobs[entry.oid])
            os.symlink(text, target)
            self._links[path] = text
        else:
            with open(target, "wb") as stream:
                if _has_bytes(path):
                    stream.write(blobs[entry.oid])
        self._files[path] = entry

    def linked_path(self, path: Path) -> str | None:
        """When the file ``path`` of the mirror is a symbolic link (or under a linked
        directory) whose file is inside the mirror: that file's path relative to the top."""
        real = os.path.realpath(path)
        if real == os.path.abspath(path) or not real.startswith(str(self.root) + os.sep):
            return None
        return Path(real).relative_to(self.root).as_posix()

    def to_repository_path(self, path: Path) -> str | None:
        """A path of the mirror as a path relative to the repository's top (``/`` separators), or
        None when it is outside the mirror."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return None


def _has_bytes(path: str) -> bool:
    """Whether a mirrored file gets its bytes (Python sources and TOML files: the policy and what
    it extends), not an empty stand-in."""
    return path.endswith((".py", ".toml"))


def _prune_directories(root: Path, removed: Iterable[str]) -> None:
    """Remove the directories left empty by removing ``removed`` (a checkout has none)."""
    parents = {Path(path).parent for path in removed}
    for parent in sorted(parents, key=lambda p: len(p.parts), reverse=True):
        while parent.parts:
            try:
                (root / parent).rmdir()
            except OSError:
                break
            parent = parent.parent


def _ask(directory: Path, *options: str) -> bytes:
    """``git rev-parse OPTIONS`` in ``directory``: its answer without the newline, empty when
    git fails."""
    done = subprocess.run([*_GIT, "-C", str(directory), "rev-parse", *options],
                          capture_output=True, stdin=subprocess.DEVNULL)
    return done.stdout.strip() if done.returncode == 0 else b""


def _first_line(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").strip()
    return text.splitlines()[0] if text else "no message"
