"""The ``importpolicy`` command line (also ``python -m flake8_importpolicy``).

Exit codes: 0 clean, 1 findings (IPL001, IPL003, IPL004, IPL005), 2 usage, policy or interpreter
error, 3 internal error (a bug in importpolicy). Errors are one clear message on stderr, never a
traceback (``IMPORTPOLICY_DEBUG=1`` prints the traceback of an internal error).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from flake8_importpolicy import __version__

if TYPE_CHECKING:
    from flake8_importpolicy.analysis.engine import PolicyEngine
    from flake8_importpolicy.model.findings import Report
    from flake8_importpolicy.model.policy import Policy
    from flake8_importpolicy.output.render import PathFormatter

# Everything else is imported where it is needed: a warm ``check`` answers from the answer index
# without loading the policy or the engine; a cold one starts the interpreter query first and imports
# the engine while it runs.

__all__ = ["CHECK_FORMATS", "WHY_FORMATS", "build_parser", "main", "run"]

CHECK_FORMATS = ("text", "json", "github", "sarif")
"""The ``--format`` choices of ``importpolicy check``."""
WHY_FORMATS = ("text", "json", "dot", "mermaid")
"""The ``--format`` choices of ``importpolicy why``."""

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2
EXIT_BUG = 3

_EPILOG = (
    "exit status: 0 clean, 1 findings (IPL001-IPL005), 2 usage, policy or interpreter error, 3 internal "
    "error (a bug in importpolicy: one line says how to report it; IMPORTPOLICY_DEBUG=1 prints the "
    "traceback)"
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``importpolicy`` (exposed for docs and tests)."""
    parser = argparse.ArgumentParser(
        prog="importpolicy",
        description="Keep Python packages light at import time: report every import-time chain "
        "from a light module to a heavy one, as declared in policy.toml.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
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
        "--interpreter", metavar="PATH",
        help="interpreter whose sys.path locates installed modules (default: the policy's "
        "interpreter, else the one running importpolicy)",
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
        epilog=_EPILOG,
    )
    check.add_argument(
        "--format", choices=CHECK_FORMATS, default="text",
        help="output format: text, json, github (GitHub Actions annotations) or sarif (SARIF 2.1.0) "
        "(default: text)",
    )
    check.set_defaults(handler=_run_check)

    why = sub.add_parser(
        "why", parents=[common], help="show what importing a module runs, and why it is heavy",
        description="Show every import-time path from MODULE to forbidden modules as a tree; with "
        "--format json and no --heavy, MODULE's whole predicted import-time closure.",
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
        "--python", "--interpreter", dest="interpreter", metavar="INTERPRETER",
        help="interpreter to run (default: the policy's interpreter, else this one)",
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
        "--no-cache", action="store_true", help="neither read nor write the on-disk facts cache"
    )
    verify.add_argument("modules", nargs="*", metavar="MODULE", help="only these light modules")
    verify.set_defaults(handler=_run_verify)

    cache = sub.add_parser("cache", help="manage the on-disk facts cache")
    cache_sub = cache.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    clear = cache_sub.add_parser(
        "clear", help="delete the cache directory of the policy",
        description="Delete the policy's cache directory (settings.cache-dir).",
    )
    clear.add_argument("--policy", type=Path, metavar="PATH", help="policy.toml or pyproject.toml")
    clear.set_defaults(handler=_run_cache_clear, format="text")
    return parser


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
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (``| head``): stop writing and leave, as the signal module's note on
        # SIGPIPE advises, with the error code (the report was not delivered).
        code = EXIT_ERROR
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
    started = time.perf_counter()
    try:
        _settle_working_directory(args)
        code = _run_cached_check(args) if args.command == "check" else None
        if code is None:
            from flake8_importpolicy.analysis.resolve import stop_started_queries
            from flake8_importpolicy.config.load import discover_policy

            policy = discover_policy(Path.cwd(), args.policy)
            _start_query_early(args, policy)
            try:
                code = _run_handler(args, policy)
            finally:
                stop_started_queries()  # a handler that failed early never collected it
    except _UsageError as exc:
        parser.exit(EXIT_ERROR, f"importpolicy: error: {exc}\n")
    except Exception as exc:
        from flake8_importpolicy.model.errors import ImportPolicyError

        if not isinstance(exc, ImportPolicyError):
            return _report_bug(exc)
        print(f"importpolicy: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.format == "text" and sys.stderr.isatty():
        print(f"({time.perf_counter() - started:.2f}s)", file=sys.stderr)
    return code


def _report_bug(error: BaseException) -> int:
    """An internal error: one line on stderr (the traceback first with ``IMPORTPOLICY_DEBUG=1``);
    returns :data:`EXIT_BUG`, which CI tells apart from findings (1) and bad input (2)."""
    if os.environ.get("IMPORTPOLICY_DEBUG", "") not in ("", "0"):
        import traceback

        traceback.print_exception(error)
    text = " ".join(f"{type(error).__name__}: {error}".split())
    print(
        f"importpolicy: internal error: {text[:300]}. This is a bug in importpolicy, not in your code "
        f"or policy; please report it to the flake8-importpolicy maintainers with the command you ran "
        f"and the traceback that IMPORTPOLICY_DEBUG=1 prints.",
        file=sys.stderr,
    )
    return EXIT_BUG


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


def _run_cached_check(args: argparse.Namespace) -> int | None:
    """``check`` answered from the answer index, without loading the policy or the engine; None when
    there is no fresh answer (or ``--no-cache``)."""
    if args.no_cache:
        return None
    from flake8_importpolicy.answers.whole import find_cached_report
    from flake8_importpolicy.config.locate import find_policy
    from flake8_importpolicy.model.paths import relpath_under

    try:
        path = args.policy.resolve() if args.policy is not None else find_policy(Path.cwd())
    except (OSError, RuntimeError):
        return None
    if path is None:
        return None
    report = find_cached_report(
        str(path), interpreter=args.interpreter, target_versions=args.target_version
    )
    if report is None:
        return None
    root = path.parent
    return _write_report(args, report, lambda shown: relpath_under((root,), shown))


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

    if args.command not in ("check", "why"):
        return
    if args.no_cache or not (policy.settings.cache_dir / "interpreters").is_dir():
        start_interpreter_query(policy.settings.interpreter_executable(args.interpreter))


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

    cache = None
    if not args.no_cache:
        from flake8_importpolicy.answers.facts_cache import open_facts_cache

        cache = open_facts_cache(policy)
    return PolicyEngine(
        policy,
        interpreter=args.interpreter,
        target_versions=args.target_version,
        facts_cache=cache,
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


def _run_check(args: argparse.Namespace, policy: Policy) -> int:
    from flake8_importpolicy.answers.whole import check_policy_cached
    from flake8_importpolicy.output.status import open_status_line

    status = open_status_line(sys.stderr)  # None unless stderr is a terminal
    try:
        report = check_policy_cached(
            policy,
            interpreter=args.interpreter,
            target_versions=args.target_version,
            use_cache=not args.no_cache,
            progress=status,
            jobs=_jobs(args),
        )
    finally:
        if status is not None:
            status.clear()
    return _write_report(args, report, policy.relpath)


def _write_report(args: argparse.Namespace, report: Report, relpath: PathFormatter) -> int:
    """Print ``report`` in ``--format``; returns the exit code."""
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

        render = format_report_github if args.format == "github" else format_report_sarif
        sys.stdout.write(render(report, workspace_relpath(find_workspace())))
    else:
        from flake8_importpolicy.output.text import format_report_text

        sys.stdout.write(format_report_text(report, relpath))
    return EXIT_FINDINGS if report.exit_code else EXIT_CLEAN


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
    if args.format == "json":
        sys.stdout.write(format_why_json(why, policy.relpath, closure=heavy is None))
    elif args.format == "dot":
        sys.stdout.write(format_why_dot(why, policy.relpath))
    elif args.format == "mermaid":
        sys.stdout.write(format_why_mermaid(why, policy.relpath))
    else:
        sys.stdout.write(format_why_text(why, policy.relpath))
    return EXIT_CLEAN


def _run_verify(args: argparse.Namespace, policy: Policy) -> int:
    from flake8_importpolicy.runtime.verify import UnknownLightModule, run_command

    cache = None
    if not args.no_cache:
        from flake8_importpolicy.answers.facts_cache import open_facts_cache

        cache = open_facts_cache(policy)
    try:
        return run_command(
            policy, python=args.interpreter, timeout=args.timeout, jobs=_jobs(args),
            modules=args.modules, output_format=args.format, facts_cache=cache,
            stdout=sys.stdout, stderr=sys.stderr,
        )
    except UnknownLightModule as exc:
        raise _UsageError(str(exc)) from exc


def _run_cache_clear(args: argparse.Namespace, policy: Policy) -> int:
    from flake8_importpolicy.answers.cache_dir import clear_cache

    directory = policy.settings.cache_dir
    cleared = clear_cache(directory)
    shown = policy.relpath(directory)
    if not cleared.found:
        print(f"no cache at {shown}")
    elif not cleared.kept:
        print(f"removed {shown}")
    else:
        names = ", ".join(cleared.kept[:10])
        if len(cleared.kept) > 10:
            names += f" and {len(cleared.kept) - 10} more"
        print(f"removed {cleared.removed} cache entries from {shown}; "
              f"kept what importpolicy did not write: {names}")
    return EXIT_CLEAN
