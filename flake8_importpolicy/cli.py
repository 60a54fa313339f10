"""The ``importpolicy`` command line (also ``python -m flake8_importpolicy``).

The exit status is :data:`EXIT_STATUS`, which ``--help`` shows: 0 clean, 1 findings, 2 a usage,
policy, baseline or interpreter error, 3 an internal error (which codes are findings is said there,
once). Errors are one clear message on stderr, never a traceback (``IMPORTPOLICY_DEBUG=1`` prints the
traceback of an internal error, which a bug report needs).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from flake8_importpolicy import __version__, docs_url

if TYPE_CHECKING:
    from flake8_importpolicy.analysis.engine import PolicyEngine
    from flake8_importpolicy.model.findings import Report, Violation
    from flake8_importpolicy.model.fixes import Fix
    from flake8_importpolicy.model.policy import Policy
    from flake8_importpolicy.output.render import PathFormatter

# Everything else is imported where it is needed: a warm ``check`` answers from the answer index
# without loading the policy or the engine; a cold one starts the interpreter query first and imports
# the engine while it runs.

__all__ = ["CHECK_FORMATS", "EXIT_STATUS", "WHY_FORMATS", "build_parser", "main", "run"]

CHECK_FORMATS = ("text", "json", "github", "sarif")
"""The ``--format`` choices of ``importpolicy check``."""
WHY_FORMATS = ("text", "json", "dot", "mermaid")
"""The ``--format`` choices of ``importpolicy why``."""

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2
EXIT_INTERNAL = 3

_EXIT_ERRORS = (
    "2 a usage, policy, baseline or interpreter error; 3 an internal error (a bug in importpolicy: "
    "one line says how to report it, IMPORTPOLICY_DEBUG=1 prints the traceback)."
)


def _exit_status(meaning: str, errors: str = _EXIT_ERRORS) -> str:
    """A command's exit statuses for its ``--help``: ``meaning`` (0 and 1), then 2 and 3, then 130
    (Ctrl-C, as a shell reports SIGINT: :mod:`flake8_importpolicy.__main__`)."""
    return f"Exit status: {meaning}; {errors} 130 interrupted (Ctrl-C)."


EXIT_STATUS = _exit_status(
    '0 clean; 1 findings (IPL001, IPL003-IPL005, IPL007-IPL009, and IPL006 with unresolved = "error")'
)
"""What each exit status of ``importpolicy`` means, written once: the ``--help`` epilog of the
command and of ``check``; ``tests/test_cli.py`` holds it to what ``check`` does on every fixture.
The other commands' epilogs (:data:`COMMAND_EXIT_STATUS`) end with the same 2 and 3."""

COMMAND_EXIT_STATUS = {
    "check": EXIT_STATUS,
    "suggest": _exit_status("0 the draft was printed or written"),
    "why": _exit_status("0 the tree or graph was shown, also when it shows a forbidden module "
                        "(check is the command that fails)"),
    "verify": _exit_status("0 every light module passes; 1 a light module fails"),
    "presets": _exit_status("0 the presets were listed", "2 an unknown preset; 3 an internal error."),
    "lsp": _exit_status("0 the client asked the server to exit",
                        "2 the lsp extra is not installed; 3 an internal error."),
    "bisect": _exit_status(
        "0 the first commit was found for every finding; 1 not found in the range",
        "2 a usage error (not a git repository, a revision that does not exist), or nothing "
        "found while a commit's tree holds a submodule or a link to outside the repository, "
        "which bisect cannot read; 3 an internal error.",
    ),
    "fix": _exit_status("0 every finding asked for was fixed; 1 a finding could not be fixed (or "
                        "none can); 2 a usage error (a target that is neither a light module of "
                        "the policy nor path:line of a file)"),
    "cache": _exit_status("0 the cache was deleted, or there was none"),
}
"""Each command's exit statuses, its ``--help`` epilog (tests/test_cli.py runs each command's
``--help``)."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``importpolicy`` (exposed for docs and tests)."""
    parser = argparse.ArgumentParser(
        prog="importpolicy",
        description="Keep Python packages light at import time: report every import-time chain "
        "from a light module to a heavy one, as declared in policy.toml.",
        epilog=EXIT_STATUS,
    )
    _add_version(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--policy", type=Path, metavar="PATH",
        help="policy.toml or pyproject.toml to use (default: found in the working directory or "
        "the nearest parent)",
    )
    common.add_argument(
        "--target-version", action="append", default=[], metavar="X.Y", type=_version,
        help="Python version whose sys.version_info branches count (repeatable; default: the "
        "policy's target-versions, else the interpreter's version)",
    )
    common.add_argument(
        "--interpreter", metavar="PATH", type=_interpreter,
        help="interpreter whose sys.path locates installed modules: a path (relative to the "
        "working directory) or a command on PATH (default: the policy's interpreter, else the one "
        "running importpolicy)",
    )
    common.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the on-disk facts cache"
    )
    common.add_argument(
        "--jobs", "-j", type=int, metavar="N",
        help="processes parsing source files in parallel on a cold run (default and most: the "
        "number of CPUs; 1 parses everything in one process)",
    )

    check = sub.add_parser(
        "check", parents=[common], help="check every light module of the policy",
        description="Report every import-time chain from a light module to a forbidden module.",
    )
    check.add_argument(
        "--format", choices=CHECK_FORMATS, default="text",
        help="output format: text, json, github (GitHub Actions annotations) or sarif (SARIF 2.1.0) "
        "(default: text)",
    )
    check.add_argument(
        "--unresolved", choices=("info", "error"),
        help="unresolved import-time code (IPL006): info reports it, error also makes the check "
        "fail (default: the policy's settings.unresolved, else info)",
    )
    check.add_argument(
        "--baseline", type=Path, metavar="FILE",
        help="report only findings not recorded in this baseline file, and each entry that no "
        "longer occurs as IPL009 (default: the policy's settings.baseline, else none)",
    )
    check.add_argument(
        "--write-baseline", nargs="?", const="", metavar="FILE",
        help="record today's IPL001 and IPL008 findings in a baseline file instead of reporting "
        "them (default FILE: --baseline, else settings.baseline, else importpolicy-baseline.json "
        "beside the policy); an existing file is rewritten sorted, without its stale entries, and "
        "gains new entries only with --add",
    )
    check.add_argument(
        "--add", action="store_true",
        help="with --write-baseline: also record findings the existing baseline does not hold",
    )
    check.add_argument(
        "--staged", action="store_true",
        help="check the files as the git index has them (what is being committed: untracked files "
        "and unstaged edits do not count), as the pre-commit hook does",
    )
    check.add_argument(
        "--verbose", "-v", action="store_true",
        help="also say which policy.toml files the search for the policy passed over (another "
        "tool's: none of importpolicy's tables)",
    )
    check.add_argument(
        "files", nargs="*", type=Path, metavar="FILE",
        help="only the light modules of these files (each must be a light module's file; default: "
        "every light module of the policy)",
    )
    check.set_defaults(handler=_run_check)

    suggest = sub.add_parser(
        "suggest", parents=[common],
        help="draft a policy: light and heavy candidates, read from the sources (never imported)",
        description="Read the source roots (never importing them) and print a draft policy.toml: "
        "light candidates (package __init__ modules, console-script and entry-point modules, "
        f"modules many others import), ranked by a score ({docs_url('adopt.md')}), each with its predicted "
        "import-time closure size and the heavy candidates it reaches; heavy candidates (modules "
        "of the heavy-ml preset reached, first-party modules with large closures). Works with or "
        "without an existing policy (--policy, or one found from the working directory).",
    )
    suggest.add_argument(
        "--limit", type=int, default=20, metavar="N",
        help="how many light candidates to list (default: 20)",
    )
    suggest.add_argument(
        "--format", choices=("toml", "json"), default="toml",
        help="toml: the draft policy.toml; json: the candidates and their numbers (default: toml)",
    )
    suggest.add_argument(
        "--output", "-o", type=Path, metavar="FILE",
        help="write the draft to FILE instead of stdout (an existing file only with --force)",
    )
    suggest.add_argument("--force", action="store_true", help="with --output: overwrite FILE")
    suggest.add_argument(
        "--source-root", action="append", default=[], type=Path, metavar="DIR",
        help="without a policy: a directory holding first-party packages (repeatable; default: "
        "src if it exists, else the working directory)",
    )
    suggest.set_defaults(handler=None)

    why = sub.add_parser(
        "why", parents=[common], help="show what importing a module runs, and why it is heavy",
        description="Show the shortest import-time chain from MODULE to each forbidden module it "
        "reaches, as a tree (one chain per forbidden module, not every path; a forbidden package's "
        "submodules count as that package); with --format json and no --heavy, MODULE's whole "
        "predicted import-time closure.",
    )
    why.add_argument("module", metavar="MODULE", help="dotted module name")
    why.add_argument("--heavy", metavar="PATTERN", help="look for this module pattern instead")
    why.add_argument(
        "--format", choices=WHY_FORMATS, default="text",
        help="output format: text (a tree), json, dot (Graphviz) or mermaid; dot and mermaid draw "
        "the chains to forbidden modules as a graph (default: text)",
    )
    why.set_defaults(handler=_run_why)

    verify = sub.add_parser(
        "verify", help="prove it at runtime: import each light module in a fresh interpreter",
        description="Import each light module in a fresh interpreter (this runs project code), "
        "record every module whose code executes, and compare with the static prediction.",
    )
    verify.add_argument(
        "--policy", type=Path, metavar="PATH", help="policy.toml or pyproject.toml to use"
    )
    verify.add_argument(
        "--python", "--interpreter", dest="interpreter", metavar="INTERPRETER", type=_interpreter,
        help="interpreter to run: a path (relative to the working directory) or a command on PATH "
        "(default: the policy's interpreter, else this one)",
    )
    verify.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    verify.add_argument(
        "--timeout", type=_seconds, default=60.0, metavar="SECONDS",
        help="per light module (default: 60)",
    )
    verify.add_argument(
        "--jobs", "-j", type=int, metavar="N",
        help="subprocesses at a time (default and most: the number of CPUs)",
    )
    verify.add_argument(
        "--max-memory", type=int, metavar="MIB",
        help="data limit of each light module's subprocess, in MiB: an import that allocates more "
        "fails with MemoryError (Linux; 0: no limit; default: 4096)",
    )
    verify.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the on-disk facts cache"
    )
    verify.add_argument(
        "--import-time", action="store_true",
        help="also measure each light module's import time with -X importtime (always done for "
        "light modules with max-import-ms)",
    )
    verify.add_argument(
        "--runs", type=int, default=5, metavar="N",
        help="fresh interpreters per light module for the import time; the median is reported "
        "(default: 5)",
    )
    verify.add_argument(
        "--fail-on-time", action="store_true",
        help="fail a light module whose median import time is over its max-import-ms (wall time "
        "is noisy: by default it is only reported)",
    )
    verify.add_argument(
        "--baseline", type=Path, metavar="FILE",
        help="the findings accepted as check accepts them (default: settings.baseline)",
    )
    verify.add_argument(
        "--no-baseline", action="store_true",
        help="fail on every forbidden module and budget, the baselined ones too",
    )
    verify.add_argument("modules", nargs="*", metavar="MODULE", help="only these light modules")
    verify.set_defaults(handler=_run_verify)

    presets = sub.add_parser(
        "presets", help="list the built-in presets (extends = [...]) with their entries and sources",
        description="List the built-in presets a policy can extend (extends = [\"torch-cuda\"]), "
        "each with every entry and the source it cites (torch version and file:line, or a "
        "measurement). Needs no policy.",
    )
    presets.add_argument("names", nargs="*", metavar="NAME", help="only these presets")
    presets.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    presets.set_defaults(handler=None)

    lsp = sub.add_parser(
        "lsp", help="run the language server on stdin/stdout (for editors without flake8)",
        description="A language server over stdio that publishes the flake8 checker's findings for "
        f"every open document, unsaved edits included ({docs_url('ecosystem.md')}). Needs the lsp extra: "
        "pip install 'flake8-importpolicy[lsp]'.",
    )
    lsp.add_argument("--policy", type=Path, metavar="PATH",
                     help="policy.toml or pyproject.toml for every document (default: found from each "
                     "document's directory)")

    bisect = sub.add_parser(
        "bisect", parents=[common],
        help="find the commit that introduced each finding (reads git objects, never checks out)",
        description="Search the commits between --good and --bad for the first commit at which "
        "each finding of a light module shows (IPL001 per forbidden module, IPL008), with its "
        "hash, subject and the hop it added. Trees are read from git's objects into a private "
        "temporary directory: the working tree, index, HEAD and stash are never touched. The "
        "policy is the one at --bad (or --policy, the file on disk). A commit where the light "
        "module does not exist or a module does not parse is skipped, as git bisect skip does.",
    )
    bisect.add_argument("--good", required=True, metavar="REV",
                        help="a commit without the finding (any git revision)")
    bisect.add_argument("--bad", default="HEAD", metavar="REV",
                        help="a commit with the finding (default: HEAD)")
    bisect.add_argument(
        "--all-parents", action="store_true",
        help="follow every parent of a merge, as git bisect does (default: first-parent history)",
    )
    bisect.add_argument("--format", choices=("text", "json"), default="text",
                        help="output format (default: text)")
    bisect.add_argument(
        "lights", nargs="*", metavar="LIGHT",
        help="light modules to search for (default: each light module with a finding at --bad "
        "that does not show at --good)",
    )
    bisect.set_defaults(handler=None)  # it reads its policy from git (_run_bisect)

    fix = sub.add_parser(
        "fix", parents=[common],
        help="write the change that removes a heavy re-export (a diff; --apply writes it)",
        description="For each IPL001 whose first hop is a re-export in a light package's "
        "__init__.py, write the fix: a lazy re-export (module __getattr__ with an explicit map, "
        "or PEP 810 lazy from ... import when every target version is 3.15+) or direct imports "
        "(the re-export removed, every first-party importer rewritten). The engine checks the "
        "patched tree in memory first; a fix that would not clear the finding or would break an "
        "importer is not offered. Prints a unified diff, its paths relative to the working "
        "directory (git apply and patch -p1 take it there), unless --apply.",
    )
    fix.add_argument(
        "--kind", choices=("lazy", "direct"), default="lazy",
        help="lazy: the name stays importable from the package, loaded on first access; direct: "
        "the re-export is removed and its importers import the submodule (default: lazy)",
    )
    fix.add_argument("--apply", action="store_true", help="write the files instead of a diff")
    fix.add_argument(
        "--force", action="store_true",
        help="apply the fix even when it lists importers it cannot keep working (a getattr(pkg, "
        "name) with a computed name, an installed module outside the project)",
    )
    fix.add_argument(
        "targets", nargs="*", metavar="LIGHT|FILE:LINE",
        help="only the findings of these light modules, or of the statement at FILE:LINE "
        "(default: every finding whose first hop is a re-export)",
    )
    fix.set_defaults(handler=_run_fix, format="text")

    cache = sub.add_parser("cache", help="manage the on-disk facts cache")
    cache_sub = cache.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    clear = cache_sub.add_parser(
        "clear", help="delete the cache directory of the policy",
        description="Delete the policy's cache directory (settings.cache-dir); with --user, the "
        "user-level cache of installed files' facts that the policy uses instead "
        "($IMPORTPOLICY_CACHE_DIR, settings.user-cache-dir or the platform's user cache directory).",
    )
    clear.add_argument("--policy", type=Path, metavar="PATH", help="policy.toml or pyproject.toml")
    clear.add_argument(
        "--user", action="store_true",
        help="clear the user-level cache shared by every project instead of the project's",
    )
    clear.set_defaults(handler=_run_cache_clear, format="text")
    for name, command in sub.choices.items():
        command.epilog = COMMAND_EXIT_STATUS[name]
        _add_version(command)
    clear.epilog = COMMAND_EXIT_STATUS["cache"]
    _add_version(clear)
    return parser


def _add_version(parser: argparse.ArgumentParser) -> None:
    """``-V``/``--version`` on ``parser``: every command and subcommand has it, as flake8's and
    ruff's do (``importpolicy check -V`` works)."""
    parser.add_argument("-V", "--version", action="version", version=f"importpolicy {__version__}")


def run() -> NoReturn:
    """The ``importpolicy`` console script: :func:`main`, then exit without tearing down the heap.

    Freeing every object of a run (syntax-tree facts, indexes, caches) at interpreter exit is a
    measurable part of a cold check (docs/performance.md, "No heap teardown at exit"); like mypy
    (``mypy.util.hard_exit``), the command line flushes its output and leaves with ``os._exit``.
    The engine has closed its worker processes and removed its temporary directories by then;
    :func:`main` itself returns normally for in-process callers.
    """
    try:
        code = main()
        if not sys.stdout.closed:  # the language server's stdout is closed when the client leaves
            sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (``| head``): stop writing and leave, as the signal module's note on
        # SIGPIPE advises, with the error code (the report was not delivered).
        code = EXIT_ERROR
    except Exception as exc:  # a bug: never exit 1, which would read as "findings"
        code = _report_bug(exc)
    try:
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``importpolicy``; returns the exit code (0 clean, 1 findings, 2 errors, 3 internal
    error: a bug, reported in one line, with the traceback only when ``IMPORTPOLICY_DEBUG=1``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "presets":
        return _run_presets(args)
    if args.command == "lsp":
        return _run_lsp(args)
    if getattr(args, "staged", False):
        return _run_staged(parser, args)
    return _run_command(parser, args)


def _run_command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Run the parsed command line ``args`` (every command but ``presets``, ``lsp`` and ``check
    --staged``); returns the exit code."""
    started = time.perf_counter()
    try:
        _settle_working_directory(args)
        _say_skipped_policies(args)
        if args.command == "bisect":
            return _run_bisect(args)
        code = _run_suggest(args) if args.command == "suggest" else None
        if code is None and args.command == "check":
            code = _run_cached_check(args)
        if code is None and args.command == "why":
            code = _run_cached_why(args)
        if code is None:
            from flake8_importpolicy.analysis.resolve import (
                start_interpreter_query,
                stop_started_queries,
            )

            try:
                if args.command in ("check", "why") and args.no_cache:
                    # Without a cache the interpreter is asked in any case: start it before the
                    # policy is read. A policy that names another interpreter starts that one too
                    # (_start_query_early), and this one is stopped below.
                    start_interpreter_query(args.interpreter)
                from flake8_importpolicy.config.load import discover_policy

                policy = discover_policy(Path.cwd(), args.policy)
                if args.command in ("why", "cache"):  # check and verify read it themselves
                    _check_baseline(policy)
                _start_query_early(args, policy)
                code = _run_handler(args, policy)
            finally:
                stop_started_queries()  # a run that failed early, or another interpreter's
    except _UsageError as exc:
        parser.exit(EXIT_ERROR, f"importpolicy: error: {exc}\n")
    except Exception as exc:
        from flake8_importpolicy.model.errors import ImportPolicyError

        if not isinstance(exc, ImportPolicyError):
            return _report_bug(exc)
        print(f"importpolicy: {exc}", file=sys.stderr)
        if args.command == "check" and args.format != "text":
            sys.stdout.write(_format_error(args.format, exc))
        return EXIT_ERROR
    if args.format == "text" and sys.stderr.isatty():
        print(f"({time.perf_counter() - started:.2f}s)", file=sys.stderr)
    return code


def _report_bug(error: BaseException) -> int:
    """An internal error: one line on stderr (the traceback first with ``IMPORTPOLICY_DEBUG=1``);
    returns :data:`EXIT_INTERNAL`, which CI tells apart from findings (1) and bad input (2)."""
    if os.environ.get("IMPORTPOLICY_DEBUG", "") not in ("", "0"):
        import traceback

        traceback.print_exception(error)
    text = " ".join(f"{type(error).__name__}: {error}".split()).rstrip(".")
    print(
        f"importpolicy: internal error (importpolicy {__version__}): {text[:300]}. This is a bug in "
        f"importpolicy, not in your code "
        f"or policy; please report it to the flake8-importpolicy maintainers with the command you ran "
        f"and the traceback that IMPORTPOLICY_DEBUG=1 prints.",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def _settle_working_directory(args: argparse.Namespace) -> None:
    """A working directory that no longer exists (deleted under the shell): with an absolute
    ``--policy``, the run moves to the policy's directory (no relative path means anything any more);
    else it is a usage error.

    Raises:
        _UsageError: the working directory is gone and the policy cannot be found without it.
    """
    try:
        os.getcwd()
        return
    except OSError:
        pass
    policy = getattr(args, "policy", None)
    if policy is None or not policy.is_absolute():
        raise _UsageError(
            "the working directory no longer exists (was it deleted?); change to the project's "
            "directory, or pass --policy with an absolute path"
        )
    os.chdir(policy.parent if policy.parent.is_dir() else policy.anchor)


class _UsageError(Exception):
    pass


def _check_baseline(policy: Policy) -> None:
    """Read the policy's baseline, so that every command that reads the policy fails alike (exit
    status 2) when its ``settings.baseline`` cannot be used.

    Raises:
        flake8_importpolicy.model.errors.BaselineError: the baseline cannot be used.
    """
    if policy.settings.baseline is not None:
        from flake8_importpolicy.config.baseline import load_policy_baseline

        load_policy_baseline(policy)


def _format_error(output_format: str, error: Exception) -> str:
    """An unusable policy (or interpreter) in a machine format of ``check``: JSON with an IPL900
    problem per problem, GitHub ``::error`` annotations, or a valid SARIF log whose invocation failed;
    each at the policy file's line and column where known."""
    from flake8_importpolicy.config.positions import find_key_positions, locate_key
    from flake8_importpolicy.model.errors import PolicyError, PolicyNotFound, PolicyProblem
    from flake8_importpolicy.model.reading import read_regular_file

    path: Path | None = None
    problems: tuple[PolicyProblem, ...] = (PolicyProblem("", str(error)),)
    if isinstance(error, PolicyError) and not isinstance(error, PolicyNotFound):
        path = error.path.absolute()
        problems = error.problems
        if any(problem.line is None or problem.file is not None for problem in problems):
            try:
                text = read_regular_file(path)[1].decode("utf-8", "replace")  # never a FIFO
                positions = find_key_positions(text)
            except OSError:
                positions = {}
            extends = (locate_key(positions, "extends")
                       or locate_key(positions, "tool.importpolicy.extends") or (None, None))
            problems = tuple(
                # a problem in a base the policy extends: at the policy's ``extends``, naming the
                # base's file, line and key in the message
                PolicyProblem(problem.shown_key, problem.message, *extends)
                if problem.file is not None
                else problem if problem.line is not None or not problem.key
                else PolicyProblem(problem.key, problem.message, *(locate_key(positions, problem.key)
                                                                   or (None, None)))
                for problem in problems
            )
    if output_format == "json":
        from flake8_importpolicy.output.json_report import format_policy_error_json

        return format_policy_error_json(problems, path.name if path is not None else None)
    from flake8_importpolicy.output.ci import (
        find_workspace,
        format_policy_error_github,
        format_policy_error_sarif,
        workspace_relpath,
    )

    shown = workspace_relpath(find_workspace())(path) if path is not None else None
    render = format_policy_error_github if output_format == "github" else format_policy_error_sarif
    return render(problems, shown)


def _run_lsp(args: argparse.Namespace) -> int:
    """``importpolicy lsp``: the language server, until the client says exit (0)."""
    try:
        from flake8_importpolicy.lsp import serve
    except ImportError as error:
        print(f"importpolicy: error: the language server needs the lsp extra (pip install "
              f"'flake8-importpolicy[lsp]'): {error}", file=sys.stderr)
        return EXIT_ERROR
    serve(policy=args.policy.absolute() if args.policy is not None else None)
    return EXIT_CLEAN


def _run_staged(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``check --staged``: the same check in a copy of the git index (config/staged.py), from the
    working directory's place in it (a ``--policy`` and each ``FILE`` inside the repository are the
    copy's), without the cache (the copy is thrown away). The command line is parsed once, so every
    spelling argparse takes (``--policy=X``, ``--pol X``) is mapped alike. An ``--interpreter``
    path stays the work tree's (already absolute: :func:`_interpreter`): a virtual environment is
    not committed, so the copy has none."""
    from flake8_importpolicy.config.staged import staged_tree
    from flake8_importpolicy.model.errors import ImportPolicyError

    here = Path.cwd()
    try:
        with staged_tree(here) as tree:
            if args.policy is not None:
                args.policy = tree.map(args.policy.absolute())
            args.files = [tree.map(file.absolute()) for file in args.files]
            args.staged, args.no_cache = False, True
            os.chdir(tree.map(here))
            try:
                return _run_command(parser, args)
            finally:
                os.chdir(here)
    except ImportPolicyError as error:
        print(f"importpolicy: {error}", file=sys.stderr)
        return EXIT_ERROR


def _say_skipped_policies(args: argparse.Namespace) -> None:
    """``--verbose``: each ``policy.toml`` the search for the policy passes over, once, on stderr."""
    if not getattr(args, "verbose", False) or getattr(args, "policy", None) is not None:
        return
    from flake8_importpolicy.config.locate import OWN_TABLES, find_policy
    from flake8_importpolicy.model.errors import display_path

    def say(path: Path) -> None:
        print(f"importpolicy: skipped {display_path(path)}: it holds none of importpolicy's tables "
              f"({', '.join(OWN_TABLES)})", file=sys.stderr)

    try:
        find_policy(Path.cwd(), skipped=say)
    except (OSError, RuntimeError):
        pass


def _run_cached_check(args: argparse.Namespace) -> int | None:
    """``check`` answered from the answer index, without loading the policy or the engine; None when
    there is no fresh answer (or ``--no-cache``, ``--write-baseline``, or ``FILE``, whose module
    names need the policy's source roots)."""
    if args.no_cache or args.write_baseline is not None or args.files:
        return None
    from flake8_importpolicy.answers.whole import find_cached_report
    from flake8_importpolicy.model.paths import relpath_under

    path = _cached_policy_path(args)
    if path is None:
        return None
    report = find_cached_report(
        str(path), interpreter=args.interpreter, target_versions=args.target_version,
        baseline=_baseline_option(args),
    )
    if report is None:
        return None
    root = path.parent
    return _write_report(args, report, lambda shown: relpath_under((root,), shown))


def _cached_policy_path(args: argparse.Namespace) -> Path | None:
    """The policy a warm ``check`` or ``why`` answers for (``--policy``, else the one found from the
    working directory), found without loading it; None if there is none."""
    from flake8_importpolicy.config.locate import find_policy

    try:
        return args.policy.resolve() if args.policy is not None else find_policy(Path.cwd())
    except (OSError, RuntimeError):
        return None


def _run_cached_why(args: argparse.Namespace) -> int | None:
    """``why`` answered from its answer index (:mod:`flake8_importpolicy.answers.why`), as a warm
    ``check`` is: without loading the policy or the engine; None when there is no fresh answer (or
    ``--no-cache``)."""
    if args.no_cache:
        return None
    from flake8_importpolicy.answers.why import find_cached_why

    path = _cached_policy_path(args)
    if path is None:
        return None
    output = find_cached_why(
        str(path), module=args.module, heavy=args.heavy, output_format=args.format,
        interpreter=args.interpreter, target_versions=args.target_version,
    )
    if output is None:
        return None
    sys.stdout.write(output)
    return EXIT_CLEAN


def _run_handler(args: argparse.Namespace, policy: Policy) -> int:
    """Run the command's handler; ``check`` and ``why`` with the cyclic garbage collector paused
    (their syntax trees have no cycles, so collections over them are wasted work; measured in
    docs/performance.md, "The garbage collector is paused"), restored afterwards for callers of
    :func:`main` in a longer-lived process."""
    paused = args.command in ("check", "why") and gc.isenabled()
    if paused:
        gc.disable()
    try:
        return int(args.handler(args, policy))
    finally:
        if paused:
            gc.enable()


def _start_query_early(args: argparse.Namespace, policy: Policy) -> None:
    """Start asking the interpreter for its sys.path while the rest of the run gets ready, when it
    will be asked: with ``--no-cache``, or before the cache has any interpreter facts."""
    from flake8_importpolicy.analysis.resolve import start_interpreter_query

    if args.command not in ("check", "why", "suggest"):
        return
    if args.no_cache or not os.path.isdir(policy.settings.cache_dir / "interpreters"):
        start_interpreter_query(policy.settings.interpreter_executable(args.interpreter))


def _interpreter(text: str) -> str:
    """``--interpreter``: a path is relative to the working directory, as every command line's
    paths are (the interpreter is queried from another directory); a command name stays one."""
    if os.sep in text or (os.altsep and os.altsep in text):
        try:
            return os.path.abspath(text)
        except OSError:  # no working directory: reported as usual
            return text
    return text


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _version(text: str) -> tuple[int, int]:
    """``--target-version``: the rule of ``settings.target-versions``."""
    from flake8_importpolicy.model.versions import parse_target_version

    try:
        return parse_target_version(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _engine(args: argparse.Namespace, policy: Policy) -> PolicyEngine:
    from flake8_importpolicy.analysis.engine import PolicyEngine

    cache = info = None
    executable = policy.settings.interpreter_executable(args.interpreter)
    if not args.no_cache:  # the facts and the interpreter's facts as check reads them (answers.compute)
        from flake8_importpolicy.answers.compute import find_interpreter_info
        from flake8_importpolicy.answers.facts_cache import open_facts_cache

        cache = open_facts_cache(policy)
        info = find_interpreter_info(policy, executable)
    return PolicyEngine(
        policy,
        interpreter=executable,
        target_versions=args.target_version,
        facts_cache=cache,
        interpreter_info=info,
        jobs=_jobs(args),
    )


def _jobs(args: argparse.Namespace) -> int:
    """``--jobs``, clamped to the CPUs this process may use (more only take turns).

    Raises:
        _UsageError: for a value below 1.
    """
    from flake8_importpolicy.analysis.parallel import default_jobs

    if args.jobs is None:
        return default_jobs()
    if args.jobs < 1:
        raise _UsageError(f"--jobs must be at least 1, got {args.jobs}")
    return min(int(args.jobs), default_jobs())


def _baseline_option(args: argparse.Namespace) -> str | None:
    """What filters the report: ``--baseline FILE`` (absolute), or None for the policy's own."""
    return str(args.baseline.absolute()) if args.baseline is not None else None


def _run_check(args: argparse.Namespace, policy: Policy) -> int:
    from flake8_importpolicy.answers.whole import check_policy_cached
    from flake8_importpolicy.output.status import open_status_line

    if args.add and args.write_baseline is None:
        raise _UsageError("--add only goes with --write-baseline")
    writing = args.write_baseline is not None
    if writing and args.files:
        raise _UsageError("--write-baseline records the whole policy's findings: name no FILE")
    status = open_status_line(sys.stderr, text="reading the sources")  # None unless a terminal
    try:
        report = check_policy_cached(
            policy,
            interpreter=args.interpreter,
            target_versions=args.target_version,
            use_cache=not args.no_cache,
            progress=status,
            jobs=_jobs(args),
            baseline="" if writing else _baseline_option(args),
            reading=status.reading if status is not None else None,
        )
    finally:
        if status is not None:
            status.clear()
    if writing:
        return _write_baseline(args, policy, report)
    if args.files:
        report = _only_light_modules_of(args.files, policy, report)
    return _write_report(args, report, policy.relpath)


def _only_light_modules_of(files: list[Path], policy: Policy, report: Report) -> Report:
    """``check FILE ...``: the findings of the light modules of ``files`` (IPL001, IPL006, IPL008),
    with the policy's own problems; a file that is not a light module's is a usage error."""
    import dataclasses

    from flake8_importpolicy.model.paths import module_name_under

    roots = policy.settings.source_roots
    wanted: set[str] = set()
    lights = (f"({', '.join(report.light_modules[:5]) or 'none'}"
              f"{', ...' if len(report.light_modules) > 5 else ''})")
    for file in files:
        if not file.exists():
            raise _UsageError(f"{file}: no such file; name the file of a light module {lights}, or no FILE")
        name = module_name_under(roots, file.absolute().resolve())
        if name is None or name not in report.light_modules:
            what = "is outside the source roots" if name is None else f"is {name}, not a light module"
            raise _UsageError(
                f"{file} {what} of the policy; name the file of a light module {lights}, or no FILE"
            )
        wanted.add(name)
    return dataclasses.replace(
        report,
        violations=tuple(v for v in report.violations if v.light in wanted),
        unresolved=tuple(u for u in report.unresolved if u.light in wanted),
        light_modules=tuple(light for light in report.light_modules if light in wanted),
    )


def _write_baseline(args: argparse.Namespace, policy: Policy, report: Report) -> int:
    """``check --write-baseline [FILE]``: record the report's IPL001 and IPL008 findings. An
    existing file is rewritten sorted without its stale entries; it gains entries only with
    ``--add`` (else exit 2, nothing written)."""
    from flake8_importpolicy.answers.jsonfile import write_text_atomic
    from flake8_importpolicy.config.baseline import format_baseline, load_baseline
    from flake8_importpolicy.model.baseline import entries_of
    from flake8_importpolicy.model.files import BASELINE_FILENAME
    from flake8_importpolicy.output.text import format_baseline_refused, format_baseline_written

    if args.write_baseline:
        target = Path(args.write_baseline).absolute()
    elif args.baseline is not None:
        target = args.baseline.absolute()
    else:
        target = policy.settings.baseline or policy.root / BASELINE_FILENAME
    if target.suffix in (".py", ".pyi"):  # `check --write-baseline app.py` meant `check app.py`
        shown = policy.relpath(target)
        raise _UsageError(
            f"--write-baseline FILE names the baseline file to write (JSON), not a source file: "
            f"{shown}; to check the light modules of {shown}, run importpolicy check {shown}"
        )
    today = entries_of(report.violations)
    before = load_baseline(
        target, named_by="--write-baseline; not overwritten").entries if target.exists() else None
    known = {entry.identity for entry in before or ()}
    added = [entry for entry in today if entry.identity not in known]
    if before is not None and added and not args.add:
        print(format_baseline_refused(policy.relpath(target), added), file=sys.stderr)
        return EXIT_ERROR
    try:
        write_text_atomic(target, format_baseline(today))
    except OSError as exc:
        raise _UsageError(f"cannot write {policy.relpath(target)}: {exc.strerror or exc}") from exc
    in_use = args.baseline is not None or policy.settings.baseline == target
    setting = os.path.relpath(target, policy.root).replace(os.sep, "/")
    removed = len(known - {entry.identity for entry in today})
    sys.stdout.write(format_baseline_written(
        policy.relpath(target), len(today), len(added), removed, None if in_use else setting
    ))
    return EXIT_CLEAN


def _write_report(args: argparse.Namespace, report: Report, relpath: PathFormatter) -> int:
    """Print ``report`` in ``--format``; returns the exit code."""
    import functools

    relpath = functools.cache(relpath)  # for this report: its chains show the same files many times
    if args.unresolved is not None and report.unresolved_fails != (args.unresolved == "error"):
        import dataclasses

        report = dataclasses.replace(report, unresolved_fails=args.unresolved == "error")
    if args.format == "json":
        from flake8_importpolicy.output.json_report import format_report_json

        sys.stdout.write(format_report_json(report, relpath))
    elif args.format in ("github", "sarif"):
        from flake8_importpolicy.output.ci import (
            find_workspace,
            format_report_github,
            format_report_sarif,
            workspace_relpath,
        )

        shown = functools.cache(workspace_relpath(find_workspace()))
        if args.format == "github":
            sys.stdout.write(format_report_github(report, shown))
        else:
            sys.stdout.write(format_report_sarif(report, shown, _sarif_fixes(args, report)))
    else:
        from flake8_importpolicy.output.style import Style, use_colour
        from flake8_importpolicy.output.text import format_report_text

        command_relpath, policy_option = _fix_command_context(args)
        sys.stdout.write(format_report_text(report, relpath, Style(use_colour(sys.stdout)),
                                            command_relpath=command_relpath,
                                            policy_option=policy_option,
                                            target_versions=_fix_target_versions(args, report)))
    return EXIT_FINDINGS if report.exit_code else EXIT_CLEAN


def _fix_command_context(args: argparse.Namespace) -> tuple[PathFormatter, str]:
    """How a "use instead" line's ``importpolicy fix`` command names its file (relative to the
    working directory, shell-quoted: ``fix`` reads its ``path:line`` from there) and its policy
    (``--policy PATH`` relative to the working directory when ``check`` was given one)."""
    import shlex

    here = Path.cwd()

    def shown(path: Path) -> str:
        try:
            relative = os.path.relpath(path, here)
        except ValueError:  # another drive
            relative = str(path)
        return shlex.quote(relative.replace(os.sep, "/"))

    policy = getattr(args, "policy", None)
    return shown, f"--policy {shown(policy.absolute())}" if policy is not None else ""


def _fix_target_versions(args: argparse.Namespace, report: Report) -> tuple[tuple[int, int], ...]:
    """The target versions that decide which fixes a "use instead" line names: ``--target-version``,
    else the policy's ``target-versions`` (the policy is read only when a finding is a re-export:
    the answer index's report comes without it); empty: the interpreter's."""
    if args.target_version:
        return tuple(args.target_version)
    from flake8_importpolicy.model.fixes import find_reexport_hop

    if not any(find_reexport_hop(v) is not None for v in report.violations):
        return ()
    from flake8_importpolicy.config.load import discover_policy

    return discover_policy(Path.cwd(), args.policy).settings.target_versions


def _sarif_fixes(args: argparse.Namespace, report: Report) -> dict[Violation, list[Fix]]:
    """The verified fixes ``importpolicy fix`` would offer for the report's re-export findings, for
    SARIF ``fixes`` (only a fix without importers it cannot keep working); the engine is loaded only
    when a finding has that shape."""
    from flake8_importpolicy.model.fixes import offered_fix_kinds

    versions = _fix_target_versions(args, report)
    fixable = [v for v in report.violations if offered_fix_kinds(v, target_versions=versions)]
    if not fixable:
        return {}
    from flake8_importpolicy.analysis.fixes import find_fixes
    from flake8_importpolicy.answers.facts_cache import open_facts_cache
    from flake8_importpolicy.config.load import discover_policy

    policy = discover_policy(Path.cwd(), args.policy)
    cache = None if args.no_cache else open_facts_cache(policy)
    found: dict[Violation, list[Fix]] = {}
    for violation in fixable:
        fixes = [fix for fix in find_fixes(policy, violation, report=report, facts_cache=cache,
                                           interpreter=args.interpreter,
                                           target_versions=args.target_version)
                 if fix.verified and not fix.blockers]
        if fixes:
            found[violation] = fixes
    return found


def _run_why(args: argparse.Namespace, policy: Policy) -> int:
    from flake8_importpolicy.model.patterns import PatternError, parse_pattern
    from flake8_importpolicy.output.graphs import format_why_dot, format_why_mermaid
    from flake8_importpolicy.output.json_report import format_why_json
    from flake8_importpolicy.output.text import format_why_text

    heavy = None
    if args.heavy:
        try:
            heavy = parse_pattern(args.heavy)
        except PatternError as exc:
            raise _UsageError(f"--heavy {args.heavy!r}: {exc}") from exc
    module = args.module
    if not all(part.isidentifier() for part in module.split(".")):
        raise _UsageError(f"{module!r} is not a dotted module name")
    with _engine(args, policy) as engine:
        if engine.index.resolve_module(module).kind == "unresolved":
            raise _UsageError(
                f"module {module!r} not found in the source roots or on the interpreter's sys.path"
            )
        why = engine.find_why(module, heavy)
    if args.format == "json" and heavy is None:
        from flake8_importpolicy.output.json_report import WHY_CLOSURE_HOPS, count_closure_hops

        hops = count_closure_hops(why)
        if hops > WHY_CLOSURE_HOPS:
            raise _UsageError(
                f"the import-time closure of {module} has chains of {hops:,} hops in all, more than "
                f"the {WHY_CLOSURE_HOPS:,} that --format json lists; pass --heavy PATTERN for one "
                "chain per forbidden module, or use --format text"
            )
    if args.format == "json":
        output = format_why_json(why, policy.relpath, closure=heavy is None)
    elif args.format == "dot":
        output = format_why_dot(why, policy.relpath)
    elif args.format == "mermaid":
        output = format_why_mermaid(why, policy.relpath)
    else:
        output = format_why_text(why, policy.relpath)
    if not args.no_cache:  # the next run answers from it (_run_cached_why)
        from flake8_importpolicy.answers.why import store_why

        store_why(
            policy, engine, output, module=module, heavy=args.heavy, output_format=args.format,
            interpreter=args.interpreter, target_versions=args.target_version,
        )
    sys.stdout.write(output)
    return EXIT_CLEAN


def _run_verify(args: argparse.Namespace, policy: Policy) -> int:
    from flake8_importpolicy.runtime.verify import UnknownLightModule, run_command

    if args.runs < 1:
        raise _UsageError(f"--runs must be at least 1, got {args.runs}")
    from flake8_importpolicy.runtime.run import DEFAULT_MEMORY_MIB

    memory = DEFAULT_MEMORY_MIB if args.max_memory is None else args.max_memory
    if memory < 0:
        raise _UsageError(f"--max-memory must be at least 0, got {memory}")
    if args.no_baseline and args.baseline is not None:
        raise _UsageError("--baseline and --no-baseline exclude each other")
    from flake8_importpolicy.config.baseline import load_policy_baseline

    baseline = load_policy_baseline(policy, "" if args.no_baseline else _baseline_option(args))
    cache = None
    if not args.no_cache:
        from flake8_importpolicy.answers.facts_cache import open_facts_cache

        cache = open_facts_cache(policy)
    try:
        return run_command(
            policy, python=args.interpreter, timeout=args.timeout, jobs=_jobs(args),
            modules=args.modules, output_format=args.format, facts_cache=cache,
            stdout=sys.stdout, stderr=sys.stderr, import_time=args.import_time, runs=args.runs,
            fail_on_time=args.fail_on_time, memory_mib=memory, baseline=baseline,
        )
    except UnknownLightModule as exc:
        raise _UsageError(str(exc)) from exc


def _run_suggest(args: argparse.Namespace) -> int:
    """``importpolicy suggest``: a draft policy from the sources (never imported), with or without an
    existing policy; written to stdout, or ``--output FILE`` (an existing file only with
    ``--force``). The draft is loaded before it is written: one that would not load is a bug."""
    from flake8_importpolicy.analysis.resolve import stop_started_queries
    from flake8_importpolicy.analysis.suggest import (
        ImportScan,
        find_first_party_modules,
        suggest_policy,
    )
    from flake8_importpolicy.config.load import load_policy, policy_from_text
    from flake8_importpolicy.config.locate import find_policy
    from flake8_importpolicy.config.presets import read_preset
    from flake8_importpolicy.config.project import find_entry_points
    from flake8_importpolicy.output.suggest import format_suggestion_json, format_suggestion_toml

    if args.limit < 0:
        raise _UsageError(f"--limit must be at least 0, got {args.limit}")
    output = args.output.absolute() if args.output is not None else None
    if output is not None and output.exists() and not args.force:
        raise _UsageError(f"{args.output} exists; pass --force to overwrite it")
    if args.force and output is None:
        raise _UsageError("--force only goes with --output")
    found = args.policy if args.policy is not None else find_policy(Path.cwd())
    if found is not None:
        if args.source_root:
            raise _UsageError("--source-root is for a project without a policy; the policy's "
                              "settings.source-roots are used")
        policy = load_policy(found)
        _check_baseline(policy)
        if output is not None and output.resolve() == policy.path:
            raise _UsageError(f"the draft extends {args.output}: write it to another file")
        root = policy.root
    else:
        root = Path.cwd().absolute()
        roots = ", ".join(json.dumps(str(r.absolute())) for r in args.source_root)
        policy = policy_from_text(f"[settings]\nsource-roots = [{roots}]\n" if roots else "",
                                  root / "policy.toml")
    directory = output.parent if output is not None else root
    heavy_ml = read_preset("heavy-ml")
    entries = [(key, reason) for table, key, reason in (heavy_ml.entries if heavy_ml else ())
               if table == "heavy"]
    roots_dirs = policy.settings.source_roots
    points = find_entry_points([root, *roots_dirs, *(r.parent for r in roots_dirs)])
    interpreter = None
    if found is None:  # no cache directory in a project that has no policy yet
        args.no_cache = True
    if found is None or policy.settings.interpreter is None:
        # a policy that names no interpreter gets the project's in the draft that extends it
        from flake8_importpolicy.config.project import find_project_interpreter

        interpreter = find_project_interpreter(root, args.interpreter)
        if interpreter is not None:  # the analysis runs on the interpreter the draft names
            args.interpreter = str(interpreter)
    _start_query_early(args, policy)
    paused = gc.isenabled()
    try:
        gc.disable()
        # while the interpreter answers the query started above
        scan = ImportScan(find_first_party_modules(roots_dirs))
        with _engine(args, policy) as engine:
            suggestion = suggest_policy(engine, scan, limit=args.limit, entry_points=points,
                                        heavy_ml=entries, root=directory)
        suggestion = dataclasses.replace(suggestion, interpreter=interpreter)
    finally:
        if paused:
            gc.enable()
        stop_started_queries()
    draft = format_suggestion_toml(suggestion, directory)
    # where the draft will be: --output, else beside the policy it extends (not in its place)
    name = "importpolicy-draft.toml" if found is not None else "policy.toml"
    policy_from_text(draft, output if output is not None else directory / name)
    text = draft if args.format == "toml" else format_suggestion_json(suggestion, directory)
    if output is None:
        sys.stdout.write(text)
        return EXIT_CLEAN
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise _UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from exc
    print(f"wrote {args.output}: {len(suggestion.light)} light and {len(suggestion.heavy)} heavy "
          "candidates", file=sys.stderr)
    return EXIT_CLEAN


def _run_fix(args: argparse.Namespace, policy: Policy) -> int:
    """``importpolicy fix``: plan and verify in memory, then print the diff or write the files."""
    from flake8_importpolicy.analysis.fixes import fix_findings
    from flake8_importpolicy.model.fixes import FixKind
    from flake8_importpolicy.model.reading import read_regular_file
    from flake8_importpolicy.output.fixes import format_fix_diff, format_fix_summary

    cache = None
    if not args.no_cache:
        from flake8_importpolicy.answers.facts_cache import open_facts_cache

        cache = open_facts_cache(policy)
    for target in args.targets:
        path, _, line = target.rpartition(":")
        if not (os.path.isfile(path) if path and line.isdigit() else policy.rules_for(target).light):
            print(f"importpolicy: fix: {target} is neither a light module of the policy nor "
                  "path:line of a file", file=sys.stderr)
            return EXIT_ERROR
    kind = FixKind.LAZY_REEXPORT if args.kind == "lazy" else FixKind.DIRECT_IMPORTS
    outcomes, patched = fix_findings(
        policy, targets=args.targets, kind=kind, force=args.force, facts_cache=cache,
        interpreter=args.interpreter, target_versions=args.target_version,
    )
    for outcome in outcomes:
        sys.stderr.write(format_fix_summary(outcome.violation, outcome.fix, outcome.reason,
                                            outcome.offered, policy.relpath))
    if not outcomes:
        print("importpolicy: no finding whose first hop is a re-export in a light package's "
              "__init__.py" + (" among " + ", ".join(args.targets) if args.targets else ""),
              file=sys.stderr)
        return EXIT_FINDINGS
    changes = {path: (read_regular_file(path)[1], data) for path, data in sorted(patched.items())}
    if args.apply:
        _write_preserving_modes({path: data for path, (_, data) in changes.items()})
        print(f"importpolicy: wrote {len(changes)} file(s)", file=sys.stderr)
    else:
        diff = format_fix_diff(changes, _working_directory_relpath)
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is not None:  # the files' own bytes (another encoding than UTF-8: latin-1)
            sys.stdout.flush()
            buffer.write(diff.encode("utf-8", "surrogateescape"))
            buffer.flush()
        else:
            sys.stdout.write(diff)
    return EXIT_CLEAN if all(o.fix is not None for o in outcomes) else EXIT_FINDINGS


def _working_directory_relpath(path: Path) -> str:
    """A fix diff's path: relative to the working directory, ``/`` separators, so ``git apply``
    (a plain diff's paths are relative to the directory it runs in, in a repository's subdirectory
    too) and ``patch -p1`` take the diff where ``fix`` ran, whichever directory the policy is in."""
    try:
        relative = os.path.relpath(path, Path.cwd())
    except ValueError:  # another drive
        relative = str(path)
    return relative.replace(os.sep, "/")


def _write_preserving_modes(files: dict[Path, bytes]) -> None:
    """Write each file (the file a symbolic link points to) through a temporary file beside it,
    with the file's mode kept; the temporary files are renamed into place only once every one is
    written, so a write that fails (a full disk) or is interrupted changes no file, and a fix of
    several files is never left half applied.

    Raises:
        _UsageError: a file cannot be written (which, and why).
    """
    import stat
    import tempfile

    written: list[tuple[str, Path]] = []
    try:
        for given, data in files.items():
            path = Path(os.path.realpath(given))  # through a symbolic link: the link stays one
            try:
                mode = stat.S_IMODE(path.stat().st_mode)
                handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                                     suffix=".tmp")
                written.append((temporary, path))
                with os.fdopen(handle, "wb") as stream:
                    stream.write(data)
                os.chmod(temporary, mode)
            except OSError as exc:
                raise _UsageError(f"cannot write {_working_directory_relpath(given)}: "
                                  f"{exc.strerror or exc}; no file was changed") from None
    except BaseException:
        for temporary, _ in written:
            try:
                os.unlink(temporary)
            except OSError:
                pass
        raise
    for temporary, path in written:
        os.replace(temporary, path)


def _run_bisect(args: argparse.Namespace) -> int:
    """``importpolicy bisect``: reads the policy and the trees from git (never the working tree's
    files but ``--policy``); SIGTERM and SIGHUP (the terminal closed, an ssh session dropped) end
    it as SIGINT does, the temporary tree removed: by default they end the process at once, which
    left the tree in ``/dev/shm``, memory until the next boot."""
    import signal

    from flake8_importpolicy.history.bisect import bisect_findings
    from flake8_importpolicy.output.bisect import format_bisect_json, format_bisect_text
    from flake8_importpolicy.output.status import open_status_line

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    stopping = [signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])]
    previous = {signum: signal.signal(signum, stop) for signum in stopping}
    status = open_status_line(sys.stderr, text="reading the history")
    try:
        result = bisect_findings(
            Path.cwd(), good=args.good, bad=args.bad, policy_file=args.policy,
            lights=args.lights, first_parent=not args.all_parents, interpreter=args.interpreter,
            target_versions=args.target_version, use_cache=not args.no_cache,
            jobs=_jobs(args) if args.jobs is not None else 1,
            progress=(lambda text: status.show(text)) if status is not None else None,
        )
    except KeyboardInterrupt:
        print("importpolicy: bisect interrupted; nothing in the repository was changed",
              file=sys.stderr)
        return 130
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if status is not None:
            status.clear()
    text = format_bisect_json(result) if args.format == "json" else format_bisect_text(result)
    sys.stdout.write(text)
    return result.exit_code


def _run_presets(args: argparse.Namespace) -> int:
    """``importpolicy presets``: needs no policy; an unknown name is a usage error (exit 2)."""
    from flake8_importpolicy.config.presets import preset_names, read_preset

    names = list(args.names) or list(preset_names())
    unknown = [name for name in names if name not in preset_names()]
    if unknown:
        print(f"importpolicy: error: unknown preset {unknown[0]!r}; built-in presets: "
              + ", ".join(preset_names()), file=sys.stderr)
        return EXIT_ERROR
    found = [preset for preset in map(read_preset, names) if preset is not None]
    if args.format == "json":
        from flake8_importpolicy.output.json_report import format_presets_json

        sys.stdout.write(format_presets_json(found))
    else:
        from flake8_importpolicy.output.text import format_presets_text

        sys.stdout.write(format_presets_text(found))
    return EXIT_CLEAN


def _run_cache_clear(args: argparse.Namespace, policy: Policy) -> int:
    from flake8_importpolicy.answers.cache_clear import clear_cache

    if args.user:
        from flake8_importpolicy.answers.cache_dir import find_user_cache_dir

        user = find_user_cache_dir(policy.settings.user_cache_dir)
        if user is None:
            print("no user-level cache (IMPORTPOLICY_CACHE_DIR or settings.user-cache-dir is "
                  "empty, or there is no home directory)")
            return EXIT_CLEAN
        directory = user
    else:
        directory = policy.settings.cache_dir
    cleared = clear_cache(directory)
    shown = policy.relpath(directory)
    if not cleared.found:
        print(f"no cache at {shown}")
    elif cleared.link is not None:
        print(f"kept {shown}: it is a symbolic link (to {cleared.link}), and cache clear deletes "
              "nothing through a link (its target may be another project's cache); clear that "
              "cache with its own policy, or remove the link")
    elif not cleared.kept:
        print(f"removed {shown}")
    else:
        names = ", ".join(cleared.kept[:10])
        if len(cleared.kept) > 10:
            names += f" and {len(cleared.kept) - 10} more"
        print(f"removed {cleared.removed} cache entries from {shown}; "
              f"kept what importpolicy did not write: {names}")
    return EXIT_CLEAN
