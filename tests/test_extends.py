"""``extends``: built-in presets and base files merged into a policy (docs/policy.md).

The fixture ``tests/fixtures/x_extends`` (a preset, a base file and a ``pyproject.toml`` base, with
precedence) is checked by tests/test_fixtures.py like every fixture; its ``broken/`` directory holds
the cycle and the errors checked here. The rest are merge rules on small policies written here, the
``importpolicy presets`` command, and the caches (a base's change is seen by the warm answer).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import HANG_CATCHER

from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.config.presets import preset_names, read_preset
from flake8_importpolicy.model.errors import PolicyError

FIXTURE = Path(__file__).parent / "fixtures" / "x_extends"
BROKEN = FIXTURE / "broken"
IMPORTPOLICY = [sys.executable, "-m", "flake8_importpolicy"]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.run([*IMPORTPOLICY, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=HANG_CATCHER)


# -- the fixture: preset, file, pyproject base, precedence ---------------------------------------


def test_fixture_merges_preset_file_and_pyproject_base() -> None:
    policy = load_policy(FIXTURE / "policy.toml")
    assert [s.label for s in policy.sources] == [
        "preset torch-cuda", "shared/base.toml", "shared/pyproject.toml"
    ]
    heavy = {rule.pattern.text: rule for rule in policy.heavy}
    # the extending file's value replaces the base's; the others keep their source
    assert heavy["app.heavy"].reason == "the extending file's reason" and heavy["app.heavy"].source == ""
    assert heavy["app.slow"].source == "shared/base.toml"
    assert heavy["app.db"].source == "shared/pyproject.toml"
    calls = {rule.pattern.text: rule for rule in policy.heavy_calls}
    assert calls["torch.cuda.current_device"].source == "preset torch-cuda"
    assert "torch.cuda.manual_seed" not in calls
    # [light."app.api"] replaced whole: no forbid = ["app.db"] from the base, so every [heavy] key
    light = {rule.pattern.text: rule for rule in policy.light}
    assert light["app.api"].reason == "imported before the engine worker forks"
    assert {h.pattern.text for h in light["app.api"].forbid} >= {"app.heavy", "app.db", "app.slow"}
    assert light["app.cli"].source == "shared/base.toml"
    # [[ignore]] entries concatenate, the base's first, each at its own file's line
    assert [(i.text, i.source, i.line) for i in policy.ignores] == [
        ("app.cli -> app.tolerated", "shared/base.toml", 14),
        ("app.api -> app.accepted", "", 16),
    ]


def test_messages_and_why_name_the_source() -> None:
    result = _run("check", "--no-cache", "--policy", str(FIXTURE / "policy.toml"), cwd=FIXTURE)
    assert result.returncode == 1, result.stderr
    assert "[from shared/pyproject.toml]" in result.stdout
    assert "[from shared/base.toml]" in result.stdout
    assert "[from preset torch-cuda]" in result.stdout
    env_path = str(FIXTURE / "site-packages")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, "PYTHONPATH": env_path}
    why = subprocess.run([*IMPORTPOLICY, "why", "app.api", "--no-cache", "--policy",
                          str(FIXTURE / "policy.toml")], cwd=FIXTURE, env=env, capture_output=True,
                         text=True, timeout=HANG_CATCHER)
    assert why.returncode == 0, why.stderr
    assert "[from preset torch-cuda]" in why.stdout and "torch.cuda.current_device()" in why.stdout
    assert "[from shared/pyproject.toml]" in why.stdout


# -- cycle and errors: every problem at once, each naming its file and key -----------------------


def test_cycle_names_the_files() -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy(BROKEN / "cycle-a.toml")
    (problem,) = caught.value.problems
    assert problem.file == "cycle-b.toml" and problem.key == "extends[0]"
    assert problem.message == "extends cycle: cycle-a.toml -> cycle-b.toml -> cycle-a.toml"


def test_errors_name_file_and_key_all_at_once() -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy(BROKEN / "errors.toml")
    shown = [(p.file, p.line, p.key, p.message.split(";")[0]) for p in caught.value.problems]
    assert shown == [
        (None, None, "extends[1]", 'unknown preset "torch-cudaa"'),
        (None, None, "extends[2]", '"missing.toml": cannot read: No such file or directory '
                                   "(relative to the file that extends it)"),
        ("not-toml.toml", 2, "", "invalid TOML: Illegal character '\\n'"),
        ("no-table/pyproject.toml", None, "", "no [tool.importpolicy] table"),
        ("bad-base.toml", 6, "settings.externl", "unknown key"),
        ("bad-base.toml", 5, "settings.source-roots[0]", '"no-such-dir" is not a directory (relative '
                                                         "to the directory of the base file that sets it)"),
        ("bad-base.toml", 2, 'heavy."app.heavy"', "empty reason"),
        ("bad-base.toml", 9, "ignore[0].reason", "missing"),
    ]
    assert 'did you mean "torch-cuda"?' in caught.value.problems[0].message
    text = str(caught.value)
    assert "  bad-base.toml:2: heavy.\"app.heavy\": empty reason" in text


def test_broken_base_exits_2_with_one_message(tmp_path: Path) -> None:
    result = _run("check", "--policy", str(BROKEN / "errors.toml"), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("is not valid (8 problems)") == 1
    assert "Traceback" not in result.stderr
    github = _run("check", "--format", "github", "--policy", str(BROKEN / "errors.toml"), cwd=tmp_path)
    assert github.returncode == 2
    lines = github.stdout.splitlines()
    assert len(lines) == 8 and all(line.startswith("::error file=") for line in lines)
    # a base's problem is shown at the extending file's extends, naming the base's file:line and key
    assert any("line=2" in line and "bad-base.toml:2: heavy.\"app.heavy\"" in line for line in lines)


# -- merge rules ------------------------------------------------------------------------------


def test_merge_rules_and_base_relative_settings(tmp_path: Path) -> None:
    _write(tmp_path, {
        "project/policy.toml": """\
            extends = ["../base/policy-base.toml"]
            [assume]
            "pkg.envs.MODE" = "prod"
            [assume.environ]
            "B" = "2"
            [light."pkg"]
            reason = "mine"
            """,
        "base/policy-base.toml": """\
            extends = ["heavy-ml"]
            [settings]
            source-roots = ["../project/src"]
            external = "stop"
            [heavy]
            "torch" = "the base's own reason"
            [assume]
            "pkg.envs.MODE" = "dev"
            "pkg.envs.DEBUG" = false
            [assume.environ]
            "A" = "1"
            "B" = false
            [light."pkg"]
            reason = "the base's"
            forbid = ["torch"]
            """,
        "project/src/pkg/__init__.py": "",
    })
    policy = load_policy(tmp_path / "project" / "policy.toml")
    assert policy.settings.source_roots == ((tmp_path / "project" / "src").resolve(),)
    assert policy.settings.external == "stop"
    heavy = {rule.pattern.text: rule for rule in policy.heavy}
    assert heavy["torch"].reason == "the base's own reason"
    assert heavy["torch"].source == "../base/policy-base.toml"
    assert heavy["jax"].source == "preset heavy-ml"
    assumed = {(a.key, a.environ): (a.value, a.source) for a in policy.assumptions}
    assert assumed == {
        ("pkg.envs.MODE", False): ("prod", ""),
        ("pkg.envs.DEBUG", False): (False, "../base/policy-base.toml"),
        ("A", True): ("1", "../base/policy-base.toml"),
        ("B", True): ("2", ""),
    }
    (light,) = policy.light
    assert light.reason == "mine" and len(light.forbid) == len(policy.heavy)  # replaced whole
    assert [s.label for s in policy.sources] == ["../base/policy-base.toml", "preset heavy-ml"]


def test_pyproject_policy_extends_and_diamond_is_no_cycle(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pyproject.toml": """\
            [tool.importpolicy]
            extends = ["a.toml", "b.toml"]
            [tool.importpolicy.settings]
            source-roots = ["."]
            """,
        "a.toml": 'extends = ["common.toml"]\n',
        "b.toml": 'extends = ["common.toml"]\n',
        "common.toml": '[heavy]\n"x" = "from common"\n',
    })
    policy = load_policy(tmp_path / "pyproject.toml")
    assert [rule.source for rule in policy.heavy] == ["common.toml"]
    (tmp_path / "common.toml").write_text('[heavy]\n"x" = ""\n')
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path / "pyproject.toml")
    (problem,) = caught.value.problems
    assert (problem.file, problem.key) == ("common.toml", 'heavy."x"')


def test_extends_value_errors(tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text('extends = "torch-cuda"\n')
    with pytest.raises(PolicyError, match=r"extends: expected an array"):
        load_policy(tmp_path / "policy.toml")
    (tmp_path / "policy.toml").write_text('extends = ["", 3]\n')
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path / "policy.toml")
    assert [p.key for p in caught.value.problems] == ["extends[0]", "extends[1]"]


# -- caches -----------------------------------------------------------------------------------


def test_digest_covers_the_bases(tmp_path: Path) -> None:
    _write(tmp_path, {"policy.toml": 'extends = ["base.toml"]\n', "base.toml": '[heavy]\n"x" = "a"\n'})
    first = load_policy(tmp_path / "policy.toml")
    (tmp_path / "base.toml").write_text('[heavy]\n"x" = "b"\n')
    second = load_policy(tmp_path / "policy.toml")
    assert first.file_digest == second.file_digest
    assert first.digest != second.digest


def test_warm_check_sees_a_changed_base(tmp_path: Path) -> None:
    _write(tmp_path, {
        "policy.toml": """\
            extends = ["base.toml"]
            [settings]
            source-roots = ["."]
            [light."app"]
            reason = "light"
            """,
        "base.toml": '[heavy]\n"app.other" = "heavy"\n',
        "app/__init__.py": "import app.slow\n",
        "app/slow.py": "",
        "app/other.py": "",
    })
    assert _run("check", cwd=tmp_path).returncode == 0
    assert _run("check", cwd=tmp_path).returncode == 0  # warm
    (tmp_path / "base.toml").write_text('[heavy]\n"app.slow" = "heavy now"\n')
    result = _run("check", cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    assert "heavy now [from base.toml]" in result.stdout


# -- importpolicy presets ---------------------------------------------------------------------


def test_presets_command_lists_entries_with_sources(tmp_path: Path) -> None:
    result = _run("presets", cwd=tmp_path)  # needs no policy
    assert result.returncode == 0, result.stderr
    for name in ("torch-cuda", "torch-cuda-driver", "heavy-ml"):
        assert f'{name} (' in result.stdout and f'extends = ["{name}"]' in result.stdout
    assert "torch.cuda.get_device_capability(): initialises CUDA" in result.stdout
    assert "torch/cuda/__init__.py:" in result.stdout
    data = json.loads(_run("presets", "torch-cuda", "--format", "json", cwd=tmp_path).stdout)
    (preset,) = data["presets"]
    assert preset["name"] == "torch-cuda" and preset["file"] == "torch-cuda.toml"
    assert all("torch 2.13.0: torch/cuda/" in e["reason"] for e in preset["entries"])
    unknown = _run("presets", "torch-cdua", cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown preset 'torch-cdua'" in unknown.stderr


def test_every_preset_loads_as_a_base(tmp_path: Path) -> None:
    for name in preset_names():
        (tmp_path / "policy.toml").write_text(f'extends = ["{name}"]\n')
        policy = load_policy(tmp_path / "policy.toml")
        preset = read_preset(name)
        assert preset is not None
        assert len(policy.heavy) + len(policy.heavy_calls) == len(preset.entries)
        assert {r.source for r in (*policy.heavy, *policy.heavy_calls)} == {f"preset {name}"}


def test_findings_about_a_base_entry_point_at_the_base(tmp_path: Path) -> None:
    _write(tmp_path, {
        "policy.toml": """\
            extends = ["base.toml"]
            [settings]
            source-roots = ["."]
            [[ignore]]
            import = "app -> nothing"
            reason = "r"
            """,
        "base.toml": """\
            # base
            [light."app"]
            reason = "r"
            forbid = ["zz_not_installed_pkg"]

            [[ignore]]
            import = "app -> x"
            reason = "r"
            """,
        "app/__init__.py": "",
    })
    result = _run("check", "--no-cache", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("base.toml:7: IPL004 [[ignore]] entry 'app -> x'")
    assert lines[1].startswith("policy.toml:5: IPL004 [[ignore]] entry 'app -> nothing'")
    # a package not installed here, with no close name: a note (whatever else is installed)
    assert lines[2].startswith(
        "base.toml:4: note: IPL007 light.\"app\".forbid[0] entry 'zz_not_installed_pkg'"
    )
