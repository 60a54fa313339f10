"""The code table is complete: every code has its section in docs/codes.md and at least one fixture,
and every code used anywhere in the package is in the table (the pyflakes codes-completeness idea)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flake8_importpolicy.codes import BY_ID, CODES

ROOT = Path(__file__).parent.parent
DOC = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("code", CODES, ids=[c.id for c in CODES])
def test_every_code_has_a_docs_section(code: object) -> None:
    assert f"## {code.id} {code.slug}\n" in DOC  # type: ignore[attr-defined]
    section = DOC.split(f"## {code.id} ")[1].split("\n## ")[0]  # type: ignore[attr-defined]
    for heading in ("**What it does.**", "**Why it matters.**", "**Example.**", "**Use instead.**",
                    "**Known limits.**"):
        assert heading in section, f"{code.id}: missing {heading}"  # type: ignore[attr-defined]


@pytest.mark.parametrize("code", CODES, ids=[c.id for c in CODES])
def test_help_is_the_docs_section(code: object) -> None:
    """SARIF rules carry ``Code.help`` as their help: it is the code's docs/codes.md section, verbatim."""
    section = DOC.split(f"## {code.id} {code.slug}\n\n")[1].split("\n## ")[0]  # type: ignore[attr-defined]
    assert code.help == section.rstrip("\n")  # type: ignore[attr-defined]


@pytest.mark.parametrize("code", CODES, ids=[c.id for c in CODES])
def test_every_code_has_a_fixture(code: object) -> None:
    fixtures = [p for p in ROOT.glob("tests/fixtures*/**/*") if p.is_file()]
    assert any(code.id in p.read_text(errors="replace") for p in fixtures)  # type: ignore[attr-defined]


def test_every_code_used_in_the_package_is_in_the_table() -> None:
    used = set()
    for path in (ROOT / "flake8_importpolicy").rglob("*.py"):
        used |= set(re.findall(r"\bIPL\d{3}\b", path.read_text(encoding="utf-8")))
    for path in (ROOT / "mypy_plugin").rglob("*.py"):
        used |= set(re.findall(r"\bIPL\d{3}\b", path.read_text(encoding="utf-8")))
    assert used <= set(BY_ID), sorted(used - set(BY_ID))


def test_policy_error_fixture_lists_every_problem_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    from flake8_importpolicy.cli import main

    code = main(["check", "--policy", str(ROOT / "tests" / "fixtures_policy_error" / "policy.toml")])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert "settings.externl: unknown key; did you mean 'external'?" in err
    assert 'quote the module name: "torch.cuda" = ...' in err
    assert 'light."app.light".reason: missing' in err


def test_a_code_is_read_only_and_the_table_s_own() -> None:
    """One instance per code (identity is equality), read-only; a copy is the table's instance."""
    import copy
    import pickle

    code = BY_ID["IPL001"]
    with pytest.raises(AttributeError, match="read-only"):
        code.id = "IPL999"
    with pytest.raises(AttributeError, match="read-only"):
        del code.slug
    assert copy.copy(code) is code and copy.deepcopy(code) is code
    assert pickle.loads(pickle.dumps(code)) is code
    assert repr(code) == "Code('IPL001', 'light-imports-heavy')"
    assert code.format(light="a", heavy="b", reason="r") == \
        "IPL001 light module a imports b at import time (r)"
