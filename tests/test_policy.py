"""Tests for flake8_importpolicy.model.patterns and flake8_importpolicy.config.load.

Error messages are part of the user interface: the broken-policy cases assert them verbatim.
"""

from __future__ import annotations

import hashlib
import os
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import DOCS_URL

from flake8_importpolicy.config.load import discover_policy, find_policy, load_policy
from flake8_importpolicy.model.errors import PolicyError, PolicyNotFound, PolicyProblem
from flake8_importpolicy.model.patterns import (
    ModulePattern,
    PatternError,
    parse_pattern,
)
from flake8_importpolicy.model.ignore import IgnoreRule, NodePattern
from flake8_importpolicy.model.policy import (
    HeavyRule,
    LightRule,
    PatternEntry,
    Policy,
)


def write(directory: Path, text: str, name: str = "policy.toml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory that is also the working directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def error_for(path: Path) -> PolicyError:
    with pytest.raises(PolicyError) as excinfo:
        load_policy(path)
    return excinfo.value


# ------------------------------------------------------------------------------------------------
# Patterns


@pytest.mark.parametrize(
    ("pattern", "module", "matches", "exactly"),
    [
        ("torch", "torch", True, True),
        ("torch", "torch.cuda", True, False),
        ("torch", "torch.cuda.amp", True, False),
        ("torch", "torchvision", False, False),
        ("torch.cuda", "torch", False, False),
        ("a.*", "a", False, False),
        ("a.*", "a.b", True, True),
        ("a.*", "a.b.c", True, False),
        ("a.*.c", "a.b.c", True, True),
        ("a.*.c", "a.b.x.c", False, False),
        ("a.*.c", "a.b.c.d", True, False),
        ("a.**", "a", False, False),
        ("a.**", "a.b", True, True),
        ("a.**", "a.b.c.d", True, True),
        ("a.**.z", "a.z", False, False),
        ("a.**.z", "a.b.z", True, True),
        ("a.**.z", "a.b.c.z", True, True),
        ("a.**.z", "a.b.c.z.q", True, False),
        ("**.ops", "ops", False, False),
        ("**.ops", "m.ops", True, True),
        ("**.ops", "m.models.ops", True, True),
        ("*", "anything", True, True),
        ("*", "any.thing", True, False),
        ("**", "any.thing", True, True),
        ("a.b", "a.bc", False, False),
        ("a.*", "ab.c", False, False),
    ],
)
def test_pattern_matching(pattern: str, module: str, matches: bool, exactly: bool) -> None:
    parsed = parse_pattern(pattern)
    assert parsed.matches(module) is matches
    assert parsed.matches_exactly(module) is exactly


def test_pattern_properties() -> None:
    plain = parse_pattern("mypkg.models.ops")
    assert not plain.is_wildcard
    assert plain.static_prefix == "mypkg.models.ops"
    assert plain.top_level == "mypkg"
    assert plain.segments == ("mypkg", "models", "ops")
    assert str(plain) == "mypkg.models.ops"

    wild = parse_pattern("mypkg.*.ops.**")
    assert wild.is_wildcard
    assert wild.static_prefix == "mypkg"
    assert wild.top_level == "mypkg"

    leading = parse_pattern("**.ops")
    assert leading.static_prefix == ""
    assert leading.top_level is None


def test_pattern_equality_and_hash() -> None:
    assert parse_pattern("a.*") == ModulePattern("a.*")
    assert len({parse_pattern("a.*"), parse_pattern("a.*"), parse_pattern("a.**")}) == 2
    assert repr(parse_pattern("a.*")) == "ModulePattern(text='a.*')"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'invalid module pattern "": empty'),
        (
            "a..b",
            'invalid module pattern "a..b": empty segment (a doubled, leading or trailing dot)',
        ),
        (".a", 'invalid module pattern ".a": empty segment (a doubled, leading or trailing dot)'),
        ("a.", 'invalid module pattern "a.": empty segment (a doubled, leading or trailing dot)'),
        (
            "foo*",
            'invalid module pattern "foo*": wildcards must be whole segments ("*" or "**"), '
            'not part of "foo*"',
        ),
        (
            "a.***",
            'invalid module pattern "a.***": wildcards must be whole segments ("*" or "**"), '
            'not part of "***"',
        ),
        ("my-pkg.x", 'invalid module pattern "my-pkg.x": "my-pkg" is not a Python identifier'),
        ("a.1b", 'invalid module pattern "a.1b": "1b" is not a Python identifier'),
        ("a b", 'invalid module pattern "a b": "a b" is not a Python identifier'),
    ],
)
def test_pattern_errors(text: str, message: str) -> None:
    with pytest.raises(PatternError) as excinfo:
        parse_pattern(text)
    assert str(excinfo.value) == message
    assert excinfo.value.text == text
    assert isinstance(excinfo.value, ValueError)


def test_pattern_constructor_validates() -> None:
    with pytest.raises(PatternError):
        ModulePattern("a..b")


# ------------------------------------------------------------------------------------------------
# Broken policies: every message verbatim

BROKEN: list[tuple[str, str, str]] = [
    (
        "not-toml",
        """
        [settings
        external = "auto"
        """,
        "policy.toml:1:10: invalid TOML: Expected ']' at the end of a table declaration",
    ),
    (
        "not-toml-unterminated-string",
        """
        [heavy]
        "torch" = "slow
        """,
        "policy.toml:2:16: invalid TOML: Illegal character '\\n'",
    ),
    (
        "duplicate-heavy-key",
        """
        [heavy]
        "torch" = "slow"
        "torch" = "very slow"
        """,
        "policy.toml:3:22: invalid TOML: Cannot overwrite a value (is a key set twice?)",
    ),
    (
        "duplicate-light-table",
        """
        [light."mypkg.api"]
        reason = "fast CLI"

        [light."mypkg.api"]
        reason = "fast API"
        """,
        'policy.toml:4:19: invalid TOML: Cannot declare [light."mypkg.api"] twice',
    ),
    (
        "wrong-section-types",
        """
        settings = 1
        heavy = ["torch"]
        light = "mypkg.api"
        ignore = "mypkg.a -> mypkg.b"
        """,
        """
        policy.toml is not valid (4 problems):
          settings: expected a table ([settings]), got the integer 1
          heavy: expected a table of "module" = "reason" entries, got an array
          light: expected a table of light modules ([light."module"] tables or "module" = "reason" entries), got the string "mypkg.api"
          ignore: expected an array of tables ([[ignore]] entries), got the string "mypkg.a -> mypkg.b"
        """,  # noqa: E501
    ),
    (
        "wrong-value-types",
        """
        [settings]
        source-roots = "src"
        interpreter = 3
        platform = 1
        external = true
        cache-dir = ""
        call-depth = true

        [light."mypkg.api"]
        reason = 1
        forbid = "torch"
        allow = [1]
        after-import = "x"
        """,
        """
        policy.toml is not valid (10 problems):
          settings.source-roots: expected an array of directories, e.g. ["src"], got the string "src"
          settings.interpreter: expected a path (relative to the policy file's directory) or a command name, got the integer 3
          settings.platform: expected a sys.platform string, e.g. "linux", got the integer 1
          settings.external: expected "auto", "follow" or "stop", got the boolean true
          settings.cache-dir: expected a directory path (relative to the policy file's directory), got the string ""
          settings.call-depth: expected an integer >= 0, got the boolean true
          light."mypkg.api".reason: expected a string, got the integer 1
          light."mypkg.api".forbid: expected an array of [heavy] keys or module patterns, got the string "torch"
          light."mypkg.api".allow[0]: expected a module pattern string, got the integer 1
          light."mypkg.api".after-import: expected an array of Python expression strings, got the string "x"
        """,  # noqa: E501
    ),
    (
        "unknown-top-level-key",
        """
        colour = "blue"

        [heavvy]
        "torch" = "slow"

        [[ignores]]
        import = "a -> b"
        reason = "r"
        """,
        """
        policy.toml is not valid (3 problems):
          colour: unknown key; expected one of: version, extends, settings, heavy, heavy-calls, light, \
ignore, assume
          heavvy: unknown key; did you mean 'heavy'?
          ignores: unknown key; did you mean 'ignore'?
        """,
    ),
    (
        "unknown-settings-key",
        """
        [settings]
        externl = "stop"
        source_roots = ["."]
        colour = "blue"
        """,
        """
        policy.toml is not valid (3 problems):
          settings.externl: unknown key; did you mean 'external'?
          settings.source_roots: unknown key; did you mean 'source-roots'?
          settings.colour: unknown key; expected one of: source-roots, interpreter, target-versions, platform, external, cache-dir, call-depth, lazy-imports, unresolved, baseline, user-cache-dir
        """,  # noqa: E501
    ),
    (
        "unknown-light-key",
        """
        [heavy]
        "torch" = "slow"

        [light."mypkg.api"]
        reason = "fast"
        forbids = ["torch"]
        after_import = []
        """,
        """
        policy.toml is not valid (2 problems):
          light."mypkg.api".forbids: unknown key; did you mean 'forbid'?
          light."mypkg.api".after_import: unknown key; did you mean 'after-import'?
        """,
    ),
    (
        "misspelt-reason-in-light-table",
        """
        [light."mypkg.api"]
        reson = "fast"
        """,
        """
        policy.toml is not valid (2 problems):
          light."mypkg.api".reson: unknown key; did you mean 'reason'?
          light."mypkg.api".reason: missing; every light module needs a reason (why it must stay light)
        """,  # noqa: E501
    ),
    (
        "invalid-pattern-characters",
        """
        [heavy]
        "my-pkg" = "slow"

        [light]
        "mypkg/api.py" = "fast"
        """,
        """
        policy.toml is not valid (2 problems):
          heavy."my-pkg": invalid module pattern "my-pkg": "my-pkg" is not a Python identifier
          light."mypkg/api.py": invalid module pattern "mypkg/api.py": "mypkg/api" is not a Python identifier
        """,  # noqa: E501
    ),
    (
        "empty-segment",
        """
        [light]
        "mypkg..api" = "fast"
        ".mypkg" = "fast"
        """,
        """
        policy.toml is not valid (2 problems):
          light."mypkg..api": invalid module pattern "mypkg..api": empty segment (a doubled, leading or trailing dot)
          light.".mypkg": invalid module pattern ".mypkg": empty segment (a doubled, leading or trailing dot)
        """,  # noqa: E501
    ),
    (
        "partial-wildcard",
        """
        [heavy]
        "torch*" = "slow"

        [light."mypkg.api"]
        reason = "fast"
        allow = ["torch.**x"]
        """,
        """
        policy.toml is not valid (2 problems):
          heavy."torch*": invalid module pattern "torch*": wildcards must be whole segments ("*" or "**"), not part of "torch*"
          light."mypkg.api".allow[0]: invalid module pattern "torch.**x": wildcards must be whole segments ("*" or "**"), not part of "**x"
        """,  # noqa: E501
    ),
    (
        "unquoted-dotted-heavy-key",
        """
        [heavy]
        "torch" = "slow"
        torch_extras.cuda = "probes the GPU"
        mypkg.config.gpu = "probes the GPU"
        """,
        """
        policy.toml is not valid (2 problems):
          heavy.torch_extras.cuda: dotted keys make nested TOML tables; quote the module name: "torch_extras.cuda" = ...
          heavy.mypkg.config.gpu: dotted keys make nested TOML tables; quote the module name: "mypkg.config.gpu" = ...
        """,  # noqa: E501
    ),
    (
        "heavy-entry-written-as-table",
        """
        [heavy."torch"]
        reason = "slow"
        """,
        """
        policy.toml is not valid (1 problem):
          heavy."torch": expected a reason string, got a table; write "torch" = "<reason>" under [heavy]
        """,  # noqa: E501
    ),
    (
        "unquoted-dotted-light-table",
        """
        [light.mypkg.models.ops]
        reason = "imported by the API server"
        """,
        """
        policy.toml is not valid (1 problem):
          light.mypkg.models.ops: dotted table names make nested TOML tables; quote the module name: [light."mypkg.models.ops"]
        """,  # noqa: E501
    ),
    (
        "unquoted-dotted-light-table-under-a-quoted-one",
        """
        [light."mypkg"]
        reason = "fast"

        [light.mypkg.api]
        reason = "fast too"
        """,
        """
        policy.toml is not valid (1 problem):
          light.mypkg.api: dotted table names make nested TOML tables; quote the module name: [light."mypkg.api"]
        """,  # noqa: E501
    ),
    (
        "unquoted-dotted-light-shorthand",
        """
        [light]
        mypkg.api = "fast"
        """,
        """
        policy.toml is not valid (1 problem):
          light.mypkg.api: dotted keys make nested TOML tables; quote the module name: "mypkg.api" = ...
        """,  # noqa: E501
    ),
    (
        "ignore-without-reason",
        """
        [[ignore]]
        import = "mypkg.a -> mypkg.b"

        [[ignore]]
        import = "mypkg.c -> mypkg.d"
        reason = "  "
        """,
        """
        policy.toml is not valid (2 problems):
          ignore[0].reason: missing; every [[ignore]] entry needs a reason (why the import is accepted)
          ignore[1].reason: empty; say why the import is accepted
        """,  # noqa: E501
    ),
    (
        "ignore-bad-import",
        """
        [[ignore]]
        import = "mypkg.a mypkg.b"
        reason = "r"

        [[ignore]]
        import = "a -> b -> c"
        reason = "r"

        [[ignore]]
        import = "mypkg..a -> "
        reason = "r"

        [[ignore]]
        reason = "r"
        improt = "a -> b"
        """,
        """
        policy.toml is not valid (6 problems):
          ignore[0].import: "mypkg.a mypkg.b" has no "->"; write "importer -> imported"
          ignore[1].import: "a -> b -> c" has more than one "->"; write "importer -> imported"
          ignore[2].import: left of "->": invalid module pattern "mypkg..a": empty segment (a doubled, leading or trailing dot)
          ignore[2].import: right of "->": invalid module pattern "": empty
          ignore[3].improt: unknown key; did you mean 'import'?
          ignore[3].import: missing; write import = "importer -> imported"
        """,  # noqa: E501
    ),
    (
        "ignore-as-single-table",
        """
        [ignore]
        import = "a -> b"
        reason = "r"
        """,
        """
        policy.toml is not valid (1 problem):
          ignore: expected an array of tables, got a table; write [[ignore]] (double brackets) before each entry
        """,  # noqa: E501
    ),
    (
        "bad-external",
        """
        [settings]
        external = "folow"
        """,
        """
        policy.toml is not valid (1 problem):
          settings.external: unknown value "folow"; did you mean "follow"? (expected "auto", "follow" or "stop")
        """,  # noqa: E501
    ),
    (
        "bad-external-no-suggestion",
        """
        [settings]
        external = "yes"
        """,
        """
        policy.toml is not valid (1 problem):
          settings.external: unknown value "yes"; expected "auto", "follow" or "stop"
        """,
    ),
    (
        "bad-target-versions",
        """
        [settings]
        target-versions = ["3.11", "3", "3.12.1", 3.10, "2.7"]
        """,
        """
        policy.toml is not valid (4 problems):
          settings.target-versions[1]: "3" is not a Python version; write "X.Y", e.g. "3.11"
          settings.target-versions[2]: "3.12.1" is not a Python version; write "X.Y", e.g. "3.11"
          settings.target-versions[3]: expected a quoted "X.Y" string, e.g. "3.11", got the float 3.1
          settings.target-versions[4]: "2.7" is not supported; only Python 3 versions ("3.Y") can be targeted
        """,  # noqa: E501
    ),
    (
        "bad-platform",
        """
        [settings]
        platform = "macOS"
        """,
        """
        policy.toml is not valid (1 problem):
          settings.platform: "macOS" is not a sys.platform value; did you mean "darwin"?
        """,
    ),
    (
        "version-2",
        """
        version = 2
        """,
        """
        policy.toml is not valid (1 problem):
          version: unsupported policy version 2; this importpolicy understands only version 1
        """,
    ),
    (
        "version-string",
        """
        version = "1"
        """,
        """
        policy.toml is not valid (1 problem):
          version: expected the integer 1, got the string "1"
        """,
    ),
    (
        "missing-light-reason",
        """
        [light."mypkg.api"]
        forbid = ["torch"]

        [light]
        "mypkg.cli" = ""
        """,
        """
        policy.toml is not valid (2 problems):
          light."mypkg.api".reason: missing; every light module needs a reason (why it must stay light)
          light."mypkg.cli": empty reason; say why the module must stay light
        """,  # noqa: E501
    ),
    (
        "light-entry-wrong-type",
        """
        [light]
        "mypkg.api" = true
        """,
        """
        policy.toml is not valid (1 problem):
          light."mypkg.api": expected a table or a reason string (why it must stay light), got the boolean true
        """,  # noqa: E501
    ),
    (
        "heavy-reason-problems",
        """
        [heavy]
        "torch" = ""
        "numpy" = 1
        """,
        """
        policy.toml is not valid (2 problems):
          heavy."torch": empty reason; say why importing it is heavy
          heavy."numpy": expected a reason string (why importing it is heavy), got the integer 1
        """,  # noqa: E501
    ),
    (
        "after-import-syntax-error",
        """
        [light."mypkg.api"]
        reason = "fast"
        after-import = ["not torch.cuda.is_initialized(", "'torch' not in sys.modules", "x ==", " "]
        """,
        """
        policy.toml is not valid (3 problems):
          light."mypkg.api".after-import[0]: invalid Python expression: '(' was never closed (column 30)
          light."mypkg.api".after-import[2]: invalid Python expression: invalid syntax
          light."mypkg.api".after-import[3]: empty; write a Python expression that must be true after import
        """,  # noqa: E501
    ),
    (
        "forbid-invalid-pattern",
        """
        [heavy]
        "torch.cuda" = "probes the GPU"

        [light."mypkg.api"]
        reason = "fast"
        forbid = ["torch.cuda", "torch..cuda", "numpy"]
        """,
        """
        policy.toml is not valid (1 problem):
          light."mypkg.api".forbid[1]: invalid module pattern "torch..cuda": empty segment (a doubled, leading or trailing dot); did you mean "torch.cuda"?
        """,  # noqa: E501
    ),
    (
        "source-root-does-not-exist",
        """
        [settings]
        source-roots = ["lib", "README.md", ""]
        """,
        """
        policy.toml is not valid (3 problems):
          settings.source-roots[0]: "lib" is not a directory (relative to the policy file's directory)
          settings.source-roots[1]: "README.md" is not a directory (relative to the policy file's directory)
          settings.source-roots[2]: empty path; write "." for the policy file's directory
        """,  # noqa: E501
    ),
    (
        "empty-source-roots",
        """
        [settings]
        source-roots = []
        """,
        """
        policy.toml is not valid (1 problem):
          settings.source-roots: empty; list at least one directory, or remove the key (default: "src" if it exists, else ".")
        """,  # noqa: E501
    ),
    (
        "interpreter-does-not-exist",
        """
        [settings]
        interpreter = ".venv/bin/python"
        """,
        """
        policy.toml is not valid (1 problem):
          settings.interpreter: ".venv/bin/python" does not exist (relative to the policy file's directory)
        """,  # noqa: E501
    ),
    (
        "interpreter-not-on-path",
        """
        [settings]
        interpreter = "no-such-python-importpolicy"
        """,
        """
        policy.toml is not valid (1 problem):
          settings.interpreter: "no-such-python-importpolicy" is not a command on PATH; give a path (relative to the policy file's directory) or a command name
        """,  # noqa: E501
    ),
    (
        "pyproject-table-pasted-into-policy-toml",
        """
        [tool.importpolicy.heavy]
        "torch" = "slow"
        """,
        """
        policy.toml is not valid (1 problem):
          tool: unknown key; in policy.toml write the tables without the tool.importpolicy prefix ([settings], [heavy], [light."..."], [[ignore]])
        """,  # noqa: E501
    ),
]


def _expected(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


@pytest.mark.parametrize(
    ("toml", "message"),
    [pytest.param(toml, message, id=name) for name, toml, message in BROKEN],
)
def test_broken_policy(project: Path, toml: str, message: str) -> None:
    path = write(project, toml)
    assert str(error_for(path)) == _expected(message)


def test_many_problems_at_once(project: Path) -> None:
    path = write(
        project,
        """
        version = 1

        [settings]
        externl = "auto"
        external = "stp"
        target-versions = ["3.x"]

        [heavy]
        "torch" = "takes 2 s to import"
        mypkg.config = "probes the GPU"

        [light."mypkg.api"]
        forbid = ["torch", "a..b"]

        [light.mypkg.cli]
        reason = "fast CLI"

        [[ignore]]
        import = "mypkg.a -> mypkg.b"
        """,
    )
    error = error_for(path)
    assert str(error) == _expected("""
        policy.toml is not valid (8 problems):
          settings.externl: unknown key; did you mean 'external'?
          settings.target-versions[0]: "3.x" is not a Python version; write "X.Y", e.g. "3.11"
          settings.external: unknown value "stp"; did you mean "stop"? (expected "auto", "follow" or "stop")
          heavy.mypkg.config: dotted keys make nested TOML tables; quote the module name: "mypkg.config" = ...
          light."mypkg.api".reason: missing; every light module needs a reason (why it must stay light)
          light."mypkg.api".forbid[1]: invalid module pattern "a..b": empty segment (a doubled, leading or trailing dot)
          light.mypkg.cli: dotted table names make nested TOML tables; quote the module name: [light."mypkg.cli"]
          ignore[0].reason: missing; every [[ignore]] entry needs a reason (why the import is accepted)
        """)  # noqa: E501
    assert error.path == path
    assert error.problems[0] == PolicyProblem(
        "settings.externl", "unknown key; did you mean 'external'?"
    )
    assert error.problems[-1].line == 19  # the `import = ...` line of the [[ignore]] entry


def test_not_utf8(project: Path) -> None:
    path = project / "policy.toml"
    path.write_bytes(b'[heavy]\n"torch" = "caf\xe9"\n')
    error = error_for(path)
    assert str(error) == "policy.toml:2:15: not valid UTF-8 (byte 0xe9)"
    assert error.problems == (PolicyProblem("", "not valid UTF-8 (byte 0xe9)", 2, 15),)


def test_unterminated_at_end_of_document(project: Path) -> None:
    path = project / "policy.toml"
    path.write_text('[heavy]\n"torch" = ', encoding="utf-8")
    assert str(error_for(path)) == "policy.toml:2:11: invalid TOML: Invalid value"


@pytest.mark.parametrize(
    "text",
    ["a = " + "[" * 5000 + "]" * 5000 + "\n", "[heavy]\n" + ".".join(["a"] * 5000) + ' = "x"\n'],
    ids=["deep-array", "deep-dotted-key"],
)
def test_deep_nesting_is_a_policy_error(project: Path, text: str) -> None:
    path = project / "policy.toml"
    path.write_text(text, encoding="utf-8")
    assert str(error_for(path)) == "policy.toml: tables or arrays nested too deeply"


def test_missing_file(project: Path) -> None:
    assert (
        str(error_for(project / "nope.toml")) == "nope.toml: cannot read: No such file or directory"
    )


def test_path_outside_cwd_is_shown_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy_dir = tmp_path / "policy"
    policy_dir.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = write(policy_dir, "version = 3\n")
    assert str(error_for(path)) == (
        f"{path} is not valid (1 problem):\n"
        "  version: unsupported policy version 3; this importpolicy understands only version 1"
    )


def test_pyproject_problems_are_prefixed(project: Path) -> None:
    write(
        project,
        """
        [project]
        name = "mypkg"

        [tool.importpolicy.settings]
        external = "folow"

        [tool.importpolicy.light.mypkg.api]
        reason = "fast"

        [[tool.importpolicy.ignore]]
        import = "a -> b"
        """,
        name="pyproject.toml",
    )
    assert str(error_for(project / "pyproject.toml")) == _expected("""
        pyproject.toml is not valid (3 problems):
          tool.importpolicy.settings.external: unknown value "folow"; did you mean "follow"? (expected "auto", "follow" or "stop")
          tool.importpolicy.light.mypkg.api: dotted table names make nested TOML tables; quote the module name: [tool.importpolicy.light."mypkg.api"]
          tool.importpolicy.ignore[0].reason: missing; every [[tool.importpolicy.ignore]] entry needs a reason (why the import is accepted)
        """)  # noqa: E501


def test_pyproject_without_table(project: Path) -> None:
    path = write(project, '[project]\nname = "x"\n', name="pyproject.toml")
    assert str(error_for(path)) == (
        "pyproject.toml: no [tool.importpolicy] table; add one, or write the policy in policy.toml"
    )


def test_pyproject_table_of_wrong_type(project: Path) -> None:
    path = write(project, '[tool]\nimportpolicy = "yes"\n', name="pyproject.toml")
    assert str(error_for(path)) == (
        "pyproject.toml is not valid (1 problem):\n"
        '  tool.importpolicy: expected a table, got the string "yes"'
    )


def test_policy_not_found(tmp_path: Path) -> None:
    start = tmp_path / "a" / "b"
    start.mkdir(parents=True)
    with pytest.raises(PolicyNotFound) as excinfo:
        # tmp_path's parents may hold a policy on a developer machine; search from a fresh root
        raise PolicyNotFound(start)
    assert str(excinfo.value) == (
        f"no policy.toml or pyproject.toml with [tool.importpolicy] found in {start} or any "
        f"parent; create one (see {DOCS_URL}/policy.md) or pass --policy PATH"
    )
    assert isinstance(excinfo.value, PolicyError)
    assert excinfo.value.path == start


def test_discover_policy_raises_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    start = tmp_path / "a"
    start.mkdir()
    if find_policy(start) is not None:
        pytest.skip("a parent of the temporary directory holds a policy")
    with pytest.raises(PolicyNotFound):
        discover_policy(start)


# ------------------------------------------------------------------------------------------------
# Valid policies


def test_empty_policy_is_valid(project: Path) -> None:
    path = write(project, "")
    policy = load_policy(path)
    assert policy.path == path.resolve()
    assert policy.root == project.resolve()
    assert policy.heavy == ()
    assert policy.light == ()
    assert policy.ignores == ()
    assert policy.digest == hashlib.sha256(b"").hexdigest()
    settings = policy.settings
    assert settings.source_roots == (project.resolve(),)
    assert settings.interpreter is None
    assert settings.target_versions == ()
    assert settings.platform == sys.platform
    assert settings.external == "auto"
    assert settings.cache_dir == project.resolve() / ".importpolicy_cache"
    assert settings.call_depth == 3


def test_default_source_root_is_src_when_it_exists(project: Path) -> None:
    (project / "src").mkdir()
    policy = load_policy(write(project, "version = 1\n"))
    assert policy.settings.source_roots == ((project / "src").resolve(),)


def test_full_policy(project: Path) -> None:
    (project / "src").mkdir()
    (project / "lib").mkdir()
    path = write(
        project,
        """
        version = 1

        [settings]
        source-roots = ["src", "lib", "src/"]
        target-versions = ["3.12", "3.11", "3.12"]
        platform = "linux"
        external = "stop"
        cache-dir = "build/cache"
        call-depth = 0

        [heavy]
        "torch" = "takes 2 s to import; the CLI must start fast"
        "mypkg.config" = "probes the GPU platform when imported"

        [light."mypkg.models.common.ops"]
        reason = "imported by the API server before EngineCore forks"
        forbid = ["mypkg.config", "numpy.*"]
        allow = ["mypkg.config.env"]
        after-import = ["not torch.cuda.is_initialized()"]

        [light]
        "mypkg.cli" = "the CLI must start fast"

        [light."mypkg.api.**"]
        reason = "the API server"
        allow = ["torch.version"]

        [[ignore]]
        import = "mypkg.cli -> mypkg.config"
        reason = "guarded by --gpu"

        [[ignore]]
        reason = "lazy"
        import = "mypkg.api.* ->  torch.**"
        """,
    )
    policy = load_policy(path)
    root = project.resolve()
    assert policy.settings.source_roots == (root / "src", root / "lib")
    assert policy.settings.target_versions == ((3, 11), (3, 12))
    assert policy.settings.platform == "linux"
    assert policy.settings.external == "stop"
    assert policy.settings.cache_dir == root / "build" / "cache"
    assert policy.settings.call_depth == 0

    torch = HeavyRule(parse_pattern("torch"), "takes 2 s to import; the CLI must start fast")
    config = HeavyRule(parse_pattern("mypkg.config"), "probes the GPU platform when imported")
    assert policy.heavy == (torch, config)

    ops, cli, api = policy.light
    assert ops == LightRule(
        pattern=parse_pattern("mypkg.models.common.ops"),
        reason="imported by the API server before EngineCore forks",
        forbid=(
            config,
            # not in [heavy]: takes the light module's reason
            HeavyRule(
                parse_pattern("numpy.*"), "imported by the API server before EngineCore forks"
            ),
        ),
        allow=(parse_pattern("mypkg.config.env"),),
        after_import=("not torch.cuda.is_initialized()",),
        # the entries that name no [heavy] key, with their lines (IPL007 when they name no module)
        entries=(
            PatternEntry('light."mypkg.models.common.ops".forbid[1]', parse_pattern("numpy.*"), 17),
            PatternEntry('light."mypkg.models.common.ops".allow[0]', parse_pattern("mypkg.config.env"), 18),
        ),
    )
    # shorthand: only a reason; forbid defaults to every [heavy] rule
    assert cli == LightRule(
        parse_pattern("mypkg.cli"), "the CLI must start fast", (torch, config), (), ()
    )
    assert api.pattern.matches_exactly("mypkg.api.v1")
    assert api.forbid == (torch, config)

    assert policy.ignores == (
        IgnoreRule(
            NodePattern(parse_pattern("mypkg.cli")),
            NodePattern(parse_pattern("mypkg.config")),
            "guarded by --gpu",
            "mypkg.cli -> mypkg.config",
            29,
        ),
        IgnoreRule(
            NodePattern(parse_pattern("mypkg.api.*")),
            NodePattern(parse_pattern("torch.**")),
            "lazy",
            "mypkg.api.* ->  torch.**",
            34,
        ),
    )
    assert policy.ignores[1].matches("mypkg.api.v1", "torch.cuda")
    assert not policy.ignores[1].matches("mypkg.api.v1", "torch")
    assert policy.digest == hashlib.sha256(path.read_bytes()).hexdigest()


def test_forbidden_rule_and_allow(project: Path) -> None:
    path = write(
        project,
        """
        [heavy]
        "torch" = "slow"
        "mypkg.config" = "probes the GPU"

        [light."mypkg.ops"]
        reason = "fast"
        allow = ["torch.version", "mypkg.config.*"]
        """,
    )
    light = load_policy(path).rules_for("mypkg.ops")
    assert light.forbidden_rule("torch") == HeavyRule(parse_pattern("torch"), "slow")
    assert light.forbidden_rule("torch.cuda.amp") == HeavyRule(parse_pattern("torch"), "slow")
    assert light.forbidden_rule("torch.version") is None
    assert light.forbidden_rule("torch.version.git") is None
    assert light.forbidden_rule("mypkg.config") == HeavyRule(
        parse_pattern("mypkg.config"), "probes the GPU"
    )
    assert light.forbidden_rule("mypkg.config.env") is None
    assert light.forbidden_rule("mypkg.configure") is None
    assert light.forbidden_rule("numpy") is None


def test_empty_forbid_forbids_nothing(project: Path) -> None:
    path = write(
        project,
        """
        [heavy]
        "torch" = "slow"

        [light."mypkg.ops"]
        reason = "fast"
        forbid = []
        after-import = ["'torch' not in sys.modules"]
        """,
    )
    light = load_policy(path).rules_for("mypkg.ops")
    assert light.forbid == ()
    assert light.forbidden_rule("torch") is None


def test_interpreter_paths(project: Path) -> None:
    python = project / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    policy = load_policy(write(project, '[settings]\ninterpreter = ".venv/bin/python"\n'))
    # relative to the policy's directory, and the venv symlink is kept
    assert policy.settings.interpreter == project.resolve() / ".venv" / "bin" / "python"

    name = Path(sys.executable).name
    monkeypatch_path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", monkeypatch_path)
        policy = load_policy(write(project, f'[settings]\ninterpreter = "{name}"\n'))
    assert policy.settings.interpreter is not None
    assert policy.settings.interpreter.is_absolute()
    assert policy.settings.interpreter.name == name


def test_interpreter_not_executable(project: Path) -> None:
    (project / "python").write_text("", encoding="utf-8")
    path = write(project, '[settings]\ninterpreter = "./python"\n')
    assert str(error_for(path)) == (
        "policy.toml is not valid (1 problem):\n"
        '  settings.interpreter: "./python" is not an executable file '
        "(relative to the policy file's directory)"
    )


def test_pyproject_policy(project: Path) -> None:
    path = write(
        project,
        """
        [project]
        name = "mypkg"

        [tool.importpolicy.heavy]
        "torch" = "slow"

        [tool.importpolicy.light]
        "mypkg.cli" = "fast CLI"

        [[tool.importpolicy.ignore]]
        import = "mypkg.cli -> torch"
        reason = "lazy"
        """,
        name="pyproject.toml",
    )
    policy = load_policy(path)
    assert policy.path == path.resolve()
    assert [rule.pattern.text for rule in policy.light] == ["mypkg.cli"]
    assert policy.light[0].forbid == (HeavyRule(parse_pattern("torch"), "slow"),)
    assert policy.ignores[0].line == 11


def test_ignore_lines_inline_array(project: Path) -> None:
    path = write(
        project,
        """
        ignore = [
            {import = "a -> b", reason = "r"},
            {import = "c -> d", reason = "r"},
        ]
        """,
    )
    assert [rule.line for rule in load_policy(path).ignores] == [2, 3]


def test_relpath(project: Path) -> None:
    policy = load_policy(write(project, ""))
    root = project.resolve()
    assert policy.relpath(root / "src" / "mypkg" / "api.py") == "src/mypkg/api.py"
    assert policy.relpath(Path("src/x.py")) == "src/x.py"
    outside = root.parent / "other.py"
    assert policy.relpath(outside) == str(outside)


# ------------------------------------------------------------------------------------------------
# Finding the policy


def test_find_policy_walks_up(tmp_path: Path) -> None:
    deep = tmp_path / "src" / "mypkg" / "models"
    deep.mkdir(parents=True)
    module = deep / "ops.py"
    module.write_text("", encoding="utf-8")
    policy = write(tmp_path, "version = 1\n")
    assert find_policy(deep) == policy.resolve()
    assert find_policy(module) == policy.resolve()
    assert discover_policy(deep).path == policy.resolve()


def test_policy_toml_wins_over_pyproject(tmp_path: Path) -> None:
    write(tmp_path, '[tool.importpolicy.heavy]\n"numpy" = "slow"\n', name="pyproject.toml")
    policy_toml = write(tmp_path, '[heavy]\n"torch" = "slow"\n')
    assert find_policy(tmp_path) == policy_toml.resolve()
    assert discover_policy(tmp_path).heavy[0].pattern.text == "torch"


def test_pyproject_without_table_does_not_count(tmp_path: Path) -> None:
    outer = write(tmp_path, '[heavy]\n"torch" = "slow"\n')
    inner = tmp_path / "pkg"
    inner.mkdir()
    write(inner, '[project]\nname = "pkg"\n', name="pyproject.toml")
    assert find_policy(inner) == outer.resolve()

    nearest = write(inner, '[project]\nname = "pkg"\n[tool.importpolicy]\n', name="pyproject.toml")
    assert find_policy(inner) == nearest.resolve()


def test_broken_pyproject_mentioning_importpolicy_counts(tmp_path: Path) -> None:
    pyproject = write(tmp_path, "[tool.importpolicy\n", name="pyproject.toml")
    assert find_policy(tmp_path) == pyproject.resolve()
    with pytest.raises(PolicyError):
        discover_policy(tmp_path)


def test_explicit_policy_wins(tmp_path: Path) -> None:
    write(tmp_path, '[heavy]\n"torch" = "slow"\n')
    explicit = write(tmp_path, '[heavy]\n"numpy" = "slow"\n', name="ci-policy.toml")
    policy = discover_policy(tmp_path, explicit)
    assert policy.path == explicit.resolve()
    assert policy.heavy[0].pattern.text == "numpy"


def test_policy_is_frozen(project: Path) -> None:
    policy: Policy = load_policy(write(project, ""))
    with pytest.raises(AttributeError):
        policy.digest = "x"  # type: ignore[misc]


def test_key_positions_for_problem_messages() -> None:
    """Where a problem's key path is written (best effort, for machine formats and IPL007)."""
    from flake8_importpolicy.config.positions import find_key_positions, locate_key

    text = textwrap.dedent('''\
        [tool.importpolicy.heavy]
        "torch" = """two
        lines"""  # a multi-line string
        'a.b' = "x"
        [tool.importpolicy.light."pkg.ops"]
        forbid = [
            "torch",  # a comment
            'pkg.confg',
        ]
        inline = {reason = "r", forbid = ["q"]}
        [[tool.importpolicy.ignore]]
        import = "a -> b"
        [[tool.importpolicy.ignore]]
        reason = "r"
    ''')
    positions = find_key_positions(text)
    assert locate_key(positions, 'tool.importpolicy.heavy."a.b"') == (4, 1)
    assert locate_key(positions, 'tool.importpolicy.light."pkg.ops".forbid[1]') == (8, 5)
    assert locate_key(positions, 'tool.importpolicy.light."pkg.ops".inline.forbid[0]') == (10, 35)
    assert locate_key(positions, 'tool.importpolicy.light."pkg.ops".reason') == (5, 1)  # its table
    assert locate_key(positions, "tool.importpolicy.ignore[1].import") == (13, 1)  # its entry
    assert locate_key(positions, "nowhere.at.all") is None
    for broken in ("[a\n", "x = [1, {", 'x = """never closed', "= 1"):  # never raises
        assert isinstance(find_key_positions(broken), dict)
