"""Hostile policies: huge ones, ones that are not files, empty ones, and a project whose modules shadow
the standard library (issue 32).

Every client that reads the policy: C = ``importpolicy`` (``check``, ``why``, ``suggest``,
``verify``, ``cache clear``), F = ``flake8`` (a file, stdin, ``-j 2``), M = ``mypy`` (also
``-n 2``), P = ``pytest --importpolicy``. A policy that cannot be used is one message and exit 2
(flake8: its report of a broken policy, exit 1), within the harness's timeout.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import DOCS_URL
from hostile import (
    Directory,
    Files,
    HEAVY_REASON,
    MYPY_SKIP,
    Run,
    Symlink,
    TREE,
    _CACHE_TREE,
    _guarded,
    _with_stdlib_cache,
    adapters,
    assert_flake8_ipl900,
    assert_violation_found,
    cli,
    flake8,
    mypy,
    mypy_stdlib_cache,
    needs_mypy,
    policy_text,
    run,
    run_all,
    run_batch,
    write,
)

from flake8_importpolicy.model.reading import count_entries

__all__ = ["mypy_stdlib_cache"]

LIGHT = "src/zoo/light.py"


def every_client(root: Path, *, mypy_options: tuple[str, ...] = ()) -> list[Run]:
    jobs: list[Callable[[], Run]] = [
        lambda: cli(root, "check"),
        lambda: cli(root, "why", "zoo.light"),
        lambda: cli(root, "suggest"),
        lambda: cli(root, "verify"),
        lambda: cli(root, "cache", "clear"),
        lambda: flake8(root, LIGHT),
        lambda: flake8(root, "-", "--stdin-display-name", LIGHT, stdin=str(TREE[LIGHT])),
        lambda: flake8(root, "-j", "2", "src"),
        lambda: run(["-m", "pytest", "--importpolicy", "-p", "no:cacheprovider", "-q"], root),
    ]
    if not MYPY_SKIP:
        jobs.append(lambda: mypy(root, *mypy_options, "-p", "zoo"))
    return run_all(*jobs)


def assert_policy_refused(results: list[Run], where: str, message: str) -> None:
    """Each client stops with ``where: message`` (mypy: ``where: error: message``; pytest names the
    file a link leads to)."""
    for result in results:
        result.assert_no_crash()
        flat = " ".join(result.output.split())
        if result.args[:3] == ("-m", "pytest", "--importpolicy"):
            assert f": {message}" in flat, result
        else:
            assert f"{where}: {message}" in flat or f"{where}: error: {message}" in flat, result
        assert result.returncode == (1 if result.args[:2] == ("-m", "flake8") else 2), result


HEAVY_TABLE = "".join(f'"zoo.h{number}" = "slow"\n' for number in range(250_000))
UNKNOWN_KEYS = "".join(f"unknown{number} = 1\n" for number in range(250_000))


@pytest.mark.parametrize("policy", [
    pytest.param(str(TREE["policy.toml"]).replace("[heavy]\n", "[heavy]\n" + HEAVY_TABLE),
                 id="250000-heavy-entries"),
    pytest.param(str(TREE["policy.toml"]).replace("[settings]\n", "[settings]\n" + UNKNOWN_KEYS),
                 id="250000-unknown-keys"),
])
def test_a_policy_over_the_size_bound_is_one_message_in_every_client(
    tmp_path: Path, mypy_stdlib_cache: Path | None, policy: str
) -> None:
    """Issue 32: a 250,000-entry ``[heavy]`` table or 250,000 unknown keys made every client take
    minutes (``cache clear`` too), validating each entry (and listing a quarter of a million
    problems). A policy file holds at most 50,000 entries, counted before validation (docs/policy.md,
    "Bounds")."""
    root = _with_stdlib_cache(write(tmp_path, {**TREE, "policy.toml": policy}), mypy_stdlib_cache)
    import tomllib

    entries = count_entries(tomllib.loads(policy))
    assert entries > 250_000
    assert_policy_refused(every_client(root), "policy.toml", (
        f"{entries:,} entries (keys and array items); a policy file holds at most "
        f'50,000 ({DOCS_URL}/policy.md#bounds)'))


@pytest.mark.parametrize(("made", "problem"), [
    pytest.param("fifo", "not a regular file (a FIFO)", id="a-fifo"),
    pytest.param(Directory(), "Is a directory", id="a-directory"),
    pytest.param(Symlink("/dev/zero"), "not a regular file (a character device)", id="dev-zero"),
    pytest.param(Symlink("nowhere.toml"), "No such file or directory", id="a-dangling-link"),
    pytest.param(Symlink("policy.toml"), "Too many levels of symbolic links", id="a-looping-link"),
])
def test_a_policy_that_is_not_a_file_is_found_and_refused_by_every_client(
    tmp_path: Path, mypy_stdlib_cache: Path | None, made: object, problem: str
) -> None:
    """Issue 32: a FIFO, a directory, ``/dev/zero``, a dangling or a looping link named
    ``policy.toml`` was passed over by discovery: flake8 went on as if there were no policy (exit 1
    for pyflakes' findings, no word of the policy), ``suggest`` exit 0, ``check`` said there was no
    policy. Discovery finds whatever is named ``policy.toml``, and loading it says what it is."""
    files: Files = {name: content for name, content in TREE.items() if name != "policy.toml"}
    if made != "fifo":
        files["policy.toml"] = made  # type: ignore[assignment]
    root = _with_stdlib_cache(write(tmp_path, files), mypy_stdlib_cache)
    if made == "fifo":
        os.mkfifo(root / "policy.toml")
    assert_policy_refused(every_client(root), "policy.toml", f"cannot read: {problem}")


@pytest.mark.parametrize(("files", "table"), [
    pytest.param({"policy.toml": ""}, "light", id="an-empty-policy"),
    pytest.param({"pyproject.toml": "[tool.importpolicy]\n"}, "tool.importpolicy.light",
                 id="an-empty-tool-importpolicy-table"),
])
def test_pytest_says_what_an_empty_policy_lacks(tmp_path: Path, files: Files, table: str) -> None:
    """Issue 32: ``pytest --importpolicy`` exited 5 ("no tests ran") on an empty policy or an empty
    ``[tool.importpolicy]`` table, without saying why. It reports one failing item that says what
    is missing (P)."""
    root = write(tmp_path, {**{k: v for k, v in TREE.items() if k != "policy.toml"}, **files})
    tested = run(["-m", "pytest", "--importpolicy", "-p", "no:cacheprovider", "-q"], root)
    tested.assert_no_crash()
    name = next(iter(files))
    assert tested.returncode == 1, tested
    assert (f"importpolicy: {name} names no light module: nothing to verify; add a "
            f'[{table}."package.module"] table with a reason '
            f'({DOCS_URL}/policy.md)') in tested.stdout


def test_tool_importpolicy_that_is_not_a_table_under_pytest(tmp_path: Path) -> None:
    """Issue 32: ``[tool.importpolicy]`` set to an integer (``importpolicy = 1`` under ``[tool]``)
    under pytest: one message, no traceback (P, C)."""
    files = {k: v for k, v in TREE.items() if k != "policy.toml"}
    root = write(tmp_path, {**files, "pyproject.toml": "[tool]\nimportpolicy = 1\n"})
    tested, checked = run_all(
        lambda: run(["-m", "pytest", "--importpolicy", "-p", "no:cacheprovider", "-q"], root),
        lambda: cli(root, "check"),
    )
    assert_policy_refused([tested, checked], "pyproject.toml is not valid (1 problem)",
                          "tool.importpolicy: expected a table, got the integer 1")


SHADOWS = ("tomllib", "difflib", "configparser", "json")


def test_modules_that_shadow_the_standard_library_are_never_ours(
    tmp_path: Path, mypy_stdlib_cache: Path | None
) -> None:
    """Issue 32: ``mypy -n 2`` on a project with a module named like the standard library's (a
    sentinel that records being run) failed: ``python -m`` puts the working directory first on
    ``sys.path`` (mypy starts its workers so, and ``python -m mypy`` is a common way to run it), and
    the plugin read the policy with the project's ``tomllib``. ``python -m flake8_importpolicy`` had
    the same flaw (a ``json.py`` was an internal error). Neither imports from the working
    directory any more (C, M; ``mypy -n 2`` now refuses the plugin in one line, docs/mypy.md). mypy
    itself may still run such a module, with or without the plugin, and a shadowing ``json.py`` or
    ``configparser.py`` breaks mypy on its own."""
    sentinels = tmp_path / "ran"
    sentinels.mkdir()
    shadows = {f"{name}.py": f"open({str(sentinels / name)!r}, 'w').close()\n" for name in SHADOWS}
    root = _with_stdlib_cache(write(tmp_path / "project", {**TREE, **shadows}), mypy_stdlib_cache)
    checked = cli(root, "check")
    checked.assert_no_crash()
    assert checked.returncode == 1 and "IPL001" in checked.stdout, checked
    assert not os.listdir(sentinels)
    if MYPY_SKIP:
        return
    for name in ("json", "configparser"):  # mypy itself needs the real ones
        (root / f"{name}.py").unlink()
    typed, parallel = run_all(lambda: mypy(root, "-p", "zoo"), lambda: mypy(root, "-n", "2", "-p", "zoo"))
    for result in (typed, parallel):
        result.assert_no_crash()
        assert "this is a bug" not in result.output, result
    assert typed.returncode == 1 and "IPL001 light module zoo.light" in typed.stdout, typed
    assert parallel.returncode == 2 and "does not support mypy -n 2" in parallel.output, parallel


# -- policies ---------------------------------------------------------------------------------------

_POLICY_TREE: Files = {
    "src/zoo/__init__.py": "",
    "src/zoo/heavy.py": "",
    "src/zoo/light.py": "import zoo.heavy\n\nprint(zoo.heavy)\n",  # nothing for pyflakes to say
}


_H = f'[heavy]\n"zoo.heavy" = "{HEAVY_REASON}"\n'


_L = '[light."zoo.light"]\nreason = "must stay light"\n'


@dataclass(frozen=True)
class PolicyCase:
    """A policy.toml and the one message every adapter must give (``message`` is the CLI's stderr
    after ``importpolicy: ``; None means the policy is valid and ``exit`` is the CLI's status)."""

    id: str
    policy: bytes
    message: str | None
    exit: int = 2
    mypy: bool = False  # also through mypy
    mypy_line: str = ""  # mypy's one line on stderr (when ``message``)


POLICY_CASES = [
    PolicyCase("empty", b"", None, exit=0, mypy=True),
    PolicyCase("comments-only", b"# nothing here yet\n\n   \n", None, exit=0),
    PolicyCase(
        "not-toml",
        b"this is not toml\n",
        "policy.toml:1:6: invalid TOML: Expected '=' after a key in a key/value pair",
        mypy=True,
        mypy_line="policy.toml:1: error: invalid TOML: Expected '=' after a key in a key/value pair",
    ),
    PolicyCase(
        "wrong-types",
        f'[settings]\nsource-roots = "src"\ncall-depth = "3"\n[heavy]\n"zoo.heavy" = 3\n'
        f'{_L}forbid = "zoo.heavy"\n'.encode(),
        "policy.toml is not valid (4 problems):\n"
        '  settings.source-roots: expected an array of directories, e.g. ["src"], got the string "src"\n'
        '  settings.call-depth: expected an integer >= 0, got the string "3"\n'
        '  heavy."zoo.heavy": expected a reason string (why importing it is heavy), got the integer 3\n'
        '  light."zoo.light".forbid: expected an array of [heavy] keys or module patterns, got the '
        'string "zoo.heavy"',
        mypy=True,
        mypy_line="policy.toml:2: error: not valid (4 problems): settings.source-roots: expected an array of "
        'directories, e.g. ["src"], got the string "src"; settings.call-depth: expected an integer >= 0, '
        'got the string "3"; heavy."zoo.heavy": expected a reason string (why importing it is heavy), got '
        'the integer 3; light."zoo.light".forbid: expected an array of [heavy] keys or module patterns, got '
        'the string "zoo.heavy"',
    ),
    PolicyCase(
        "unknown-keys",
        f'[settings]\nexternl = "stop"\n{_H}[hevy]\n{_L}forbd = []\n'.encode(),
        "policy.toml is not valid (3 problems):\n"
        "  hevy: unknown key; did you mean 'heavy'?\n"
        "  settings.externl: unknown key; did you mean 'external'?\n"
        "  light.\"zoo.light\".forbd: unknown key; did you mean 'forbid'?",
    ),
    PolicyCase(
        "duplicate-light-table",
        f"{_H}{_L}{_L}".encode(),
        'policy.toml:5:19: invalid TOML: Cannot declare [light."zoo.light"] twice',
    ),
    PolicyCase(
        "duplicate-light-shorthand-and-table",
        f'{_H}[light]\n"zoo.light" = "fast"\n{_L}'.encode(),
        "policy.toml:5:19: invalid TOML: Cannot overwrite a value (is a key set twice?)",
    ),
    PolicyCase(
        "duplicate-light-quote-styles",
        f'{_H}[light]\n"zoo.light" = "fast"\n\'zoo.light\' = "fast"\n'.encode(),
        "policy.toml:5:21: invalid TOML: Cannot overwrite a value (is a key set twice?)",
    ),
    PolicyCase(
        "invalid-characters",
        f'[heavy]\n"zoo.he-avy" = "x"\n"zoo/heavy" = "x"\n"zo*o" = "x"\n{_L}'.encode(),
        "policy.toml is not valid (3 problems):\n"
        '  heavy."zoo.he-avy": invalid module pattern "zoo.he-avy": "he-avy" is not a Python identifier\n'
        '  heavy."zoo/heavy": invalid module pattern "zoo/heavy": "zoo/heavy" is not a Python identifier\n'
        '  heavy."zo*o": invalid module pattern "zo*o": wildcards must be whole segments ("*" or "**"), '
        'not part of "zo*o"',
    ),
    PolicyCase(
        "empty-segment",
        f'[heavy]\n"zoo..heavy" = "x"\n"zoo." = "x"\n"" = "x"\n{_L}'.encode(),
        "policy.toml is not valid (3 problems):\n"
        '  heavy."zoo..heavy": invalid module pattern "zoo..heavy": empty segment (a doubled, leading or '
        "trailing dot)\n"
        '  heavy."zoo.": invalid module pattern "zoo.": empty segment (a doubled, leading or trailing dot)\n'
        '  heavy."": invalid module pattern "": empty',
    ),
    PolicyCase(
        "unquoted-dotted-keys",
        b'[heavy]\nzoo.heavy = "x"\n[light.zoo.light]\nreason = "r"\n',
        "policy.toml is not valid (2 problems):\n"
        '  heavy.zoo.heavy: dotted keys make nested TOML tables; quote the module name: "zoo.heavy" = ...\n'
        "  light.zoo.light: dotted table names make nested TOML tables; quote the module name: "
        '[light."zoo.light"]',
        mypy=True,
        mypy_line="policy.toml:2: error: not valid (2 problems): heavy.zoo.heavy: dotted keys make nested "
        "TOML "
        'tables; quote the module name: "zoo.heavy" = ...; light.zoo.light: dotted table names make nested '
        'TOML tables; quote the module name: [light."zoo.light"]',
    ),
    PolicyCase(
        "ignore-without-reason",
        f'{_H}{_L}[[ignore]]\nimport = "zoo.light -> zoo.heavy"\n'.encode(),
        "policy.toml is not valid (1 problem):\n"
        "  ignore[0].reason: missing; every [[ignore]] entry needs a reason (why the import is accepted)",
        mypy=True,
        mypy_line="policy.toml:6: error: ignore[0].reason: missing; every [[ignore]] entry needs a "
        "reason (why the import is accepted)",
    ),
    PolicyCase("bom", f"\ufeff{_H}{_L}".encode(), None, exit=1),
    PolicyCase(
        "invalid-utf8",
        f"{_H}# caf".encode() + b"\xe9\n" + _L.encode(),
        "policy.toml:3:6: not valid UTF-8 (byte 0xe9)",
    ),
    PolicyCase("nul-byte", f"{_H}".encode() + b"\x00\n", "policy.toml:3:1: invalid TOML: Invalid statement"),
    PolicyCase(
        "nested-too-deeply",  # ours (version): a file holding none of its tables is another tool's
        b"version = 1\nx = " + b"[" * 5000 + b"]" * 5000 + b"\n",
        "policy.toml: tables or arrays nested too deeply",
    ),
    PolicyCase(
        "unsupported-version",
        f"version = 2\n{_H}{_L}".encode(),
        "policy.toml is not valid (1 problem):\n"
        "  version: unsupported policy version 2; this importpolicy understands only version 1",
    ),
    PolicyCase(
        "interpreter-fails",
        f'[settings]\ninterpreter = "/bin/false"\n{_H}{_L}'.encode(),
        "interpreter /bin/false failed to report its sys.path (exit 1): no output",
    ),
]


@dataclass(frozen=True)
class PolicyRuns:
    check: Run
    flake8: Run


@pytest.fixture(scope="module")
def policy_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PolicyRuns]:
    """Every policy case through ``importpolicy check`` and ``flake8`` (default selection), batched: two
    interpreters (CLI cases, flake8 cases) running side by side."""
    base = tmp_path_factory.mktemp("policies")
    roots = {}
    for case in POLICY_CASES:
        root = write(base / case.id, _POLICY_TREE)
        (root / "policy.toml").write_bytes(case.policy)
        roots[case.id] = root
    checks, lints = run_all(
        lambda: run_batch(
            [("importpolicy", roots[c.id], ["check", "--no-cache"]) for c in POLICY_CASES],
            base / POLICY_CASES[0].id,
        ),
        lambda: run_batch(
            [("flake8", roots[c.id], ["src/zoo/light.py"]) for c in POLICY_CASES], base / POLICY_CASES[1].id
        ),
    )
    return {case.id: PolicyRuns(checks[i], lints[i]) for i, case in enumerate(POLICY_CASES)}


@pytest.mark.parametrize("case", POLICY_CASES, ids=[c.id for c in POLICY_CASES])
def test_policy_error_is_one_clear_message_in_cli_and_flake8(
    policy_runs: dict[str, PolicyRuns], case: PolicyCase
) -> None:
    runs = policy_runs[case.id]
    runs.check.assert_no_crash()
    runs.flake8.assert_no_crash()
    if case.message is None:
        assert runs.check.returncode == case.exit, runs.check
        assert runs.check.stderr == ""
        if case.exit == 0:
            assert runs.check.stdout == (
                "Nothing was checked: no [light] pattern of the policy names a module.\n")
            assert (runs.flake8.returncode, runs.flake8.stdout, runs.flake8.stderr) == (0, "", "")
        else:
            assert runs.flake8.found("IPL") == {("src/zoo/light.py", 1, "IPL001")}, runs.flake8
        return
    assert (runs.check.returncode, runs.check.stdout) == (2, ""), runs.check
    assert runs.check.stderr == f"importpolicy: {case.message}\n"
    # flake8: the same words, as one IPL900 at line 1 (exit 1), no E902/E999 on the file
    assert runs.flake8.stderr == "", runs.flake8
    assert_flake8_ipl900(runs.flake8, case.message)


def test_policy_option_naming_a_directory(tmp_path: Path) -> None:
    root = write(tmp_path, {**_POLICY_TREE, "conf/policy.toml/readme": "a directory named policy.toml\n"})
    checked, linted = run_all(
        lambda: cli(root, "check", "--policy", "conf/policy.toml"),
        lambda: flake8(root, "--import-policy", "conf/policy.toml", "src/zoo/light.py"),
    )
    for result in (checked, linted):
        result.assert_no_crash()
    assert (checked.returncode, checked.stderr) == (
        2,
        "importpolicy: conf/policy.toml: cannot read: Is a directory\n",
    )
    assert_flake8_ipl900(linted, "Is a directory")


MYPY_POLICY_CASES = [case for case in POLICY_CASES if case.mypy]


@needs_mypy
@pytest.mark.parametrize("case", MYPY_POLICY_CASES, ids=[c.id for c in MYPY_POLICY_CASES])
def test_mypy_policy_error_is_one_line_and_exit_2(
    tmp_path: Path, mypy_stdlib_cache: Path | None, case: PolicyCase
) -> None:
    root = _with_stdlib_cache(write(tmp_path, {**_CACHE_TREE}), mypy_stdlib_cache)
    (root / "policy.toml").write_bytes(case.policy)
    result = mypy(root, "-p", "zoo")
    result.assert_no_crash()
    if case.message is None:
        assert (result.returncode, result.stderr) == (case.exit, ""), result
        assert result.stdout.startswith("Success: no issues found"), result
        return
    assert (result.returncode, result.stderr) == (2, f"{case.mypy_line}\n"), result
    assert result.stdout == "Found 1 error in 1 file (errors prevented further checking)\n", result


def test_deeply_nested_after_import_expression(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """``"-" * 10000 + "1"`` was a MemoryError in the CLI and flake8 and "Error constructing plugin
    instance" in mypy; at depth 3000 the message named the wrong key (the file's, not the item's)."""
    for depth in (3_000, 10_000):
        policy = policy_text("zoo.light") + f'after-import = ["{"-" * depth}1"]\n'
        root = _with_stdlib_cache(write(tmp_path / str(depth), {**TREE, "policy.toml": policy}),
                                  mypy_stdlib_cache)
        checked, linted, typed = adapters(root)
        key = 'light."zoo.light".after-import[0]'
        problem = f"{key}: invalid Python expression: nested too deeply to parse"
        message = f"policy.toml is not valid (1 problem):\n  {problem}"
        for result in (checked, linted, typed):
            if result is not None:
                result.assert_no_crash()
        assert (checked.returncode, checked.stderr) == (2, f"importpolicy: {message}\n"), checked
        assert_flake8_ipl900(linted, message)
        if typed is not None:
            assert typed.returncode == 2, typed
            assert re.fullmatch(rf"policy\.toml(:\d+)?: error: {re.escape(problem)}\n", typed.stderr), typed


def test_fullwidth_keys_are_nfkc_normalised(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """``"ｚｏｏ.ｈｅａｖｙ"`` was accepted but never matched: keys are NFKC-normalised, as CPython
    normalises identifiers (``import ｚｏｏ.ｈｅａｖｙ`` imports ``zoo.heavy``)."""
    policy = (
        '[settings]\nsource-roots = ["src"]\n[heavy]\n"ｚｏｏ.ｈｅａｖｙ" = "slow to import"\n'
        '[light."ｚｏｏ.ｌｉｇｈｔ"]\nreason = "must stay light"\n'
    )
    root = _with_stdlib_cache(write(tmp_path, {**TREE, "policy.toml": policy}), mypy_stdlib_cache)
    assert_violation_found(*adapters(root))


def test_target_version_has_one_rule(tmp_path: Path) -> None:
    """``--target-version 2.7`` was accepted on the command line and rejected in the policy."""
    root = write(tmp_path, {
        **TREE, "policy.toml": policy_text("zoo.light").replace(
            "[settings]\n", '[settings]\ntarget-versions = ["2.7"]\n')})
    in_policy = cli(root, "check")
    in_option = cli(root, "check", "--policy", str(write(tmp_path / "ok", TREE) / "policy.toml"),
                    "--target-version", "2.7")
    problem = '"2.7" is not supported; only Python 3 versions ("3.Y") can be targeted'
    assert (in_policy.returncode, in_policy.stderr) == (
        2, f"importpolicy: policy.toml is not valid (1 problem):\n  settings.target-versions[0]: {problem}\n")
    assert in_option.returncode == 2, in_option
    assert in_option.stderr.endswith(f"importpolicy check: error: argument --target-version: {problem}\n")


def test_twenty_thousand_light_keys(tmp_path: Path) -> None:
    """20,000 ``[light]`` keys took 3 min 44 s: the policy was read again for each IPL003's line."""
    keys = "".join(f'[light."zoo.gone{n:05d}"]\nreason = "r"\n' for n in range(20_000))
    policy = policy_text("zoo.light") + keys
    last = policy.splitlines().index('[light."zoo.gone19999"]') + 1
    root = write(tmp_path, {**TREE, "policy.toml": policy})
    checked, linted = _guarded(  # about a second each; a minute or more before
        lambda: cli(root, "check", "--no-cache"),
        lambda: flake8(root, "src/zoo/light.py"),
    )
    for result in (checked, linted):
        result.assert_no_crash()
        assert result.returncode == 1, result
    lines = checked.stdout.splitlines()
    assert f"policy.toml:{last}: IPL003 light pattern 'zoo.gone19999' matches no module" in lines
    assert lines[-1] == "Found 1 violation in 1 light module, 20000 problems."
    assert linted.found("IPL") == {("src/zoo/light.py", 2, "IPL001")}, linted


# -- files that are not what they seem: read only regular files, at most 10 MiB ---------------------

NOT_REGULAR = "cannot read: not a regular file"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_policy_that_is_a_fifo_or_a_device_or_too_large(tmp_path: Path) -> None:
    """A FIFO as the policy blocked for ever (``check --policy p.toml``, ``flake8 --import-policy``),
    ``--policy /dev/zero`` read without bound: only a regular file of at most 10 MiB is read."""
    root = write(tmp_path, {**TREE, "big.toml": "# " + "x" * (10 * 1024 * 1024) + "\n"})
    os.mkfifo(root / "fifo.toml")
    checks = ["fifo.toml", "/dev/zero", "big.toml"]
    results = _guarded(
        *(lambda policy=policy: cli(root, "check", "--policy", policy) for policy in checks),
        lambda: flake8(root, "--import-policy", "fifo.toml", "src/zoo/light.py"),
    )
    expected = [
        f"fifo.toml: {NOT_REGULAR} (a FIFO)",
        f"/dev/zero: {NOT_REGULAR} (a character device)",
        "big.toml: cannot read: larger than 10 MiB, the limit for the files importpolicy reads",
    ]
    for result, message in zip(results, expected):
        result.assert_no_crash()
        assert (result.returncode, result.stdout, result.stderr) == (2, "", f"importpolicy: {message}\n")
    linted = results[-1]
    linted.assert_no_crash()
    assert_flake8_ipl900(linted, expected[0].partition(": ")[2])
