"""The JSON Schema of policy.toml (``flake8_importpolicy/schema/policy.schema.json``) for TOML editors.

It is made from the declaration of the keys (``flake8_importpolicy/config/keys.py``), as the loader's
validation is; it must accept every policy the project ships and reject what the loader rejects for the
common mistakes (the loader's own messages stay the ones users see from importpolicy).
"""

from __future__ import annotations

import configparser
import fnmatch
import json
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from flake8_importpolicy.config.keys import IGNORE, LIGHT, POLICY, SETTINGS
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.config.reference import format_schema
from flake8_importpolicy.model.errors import PolicyError
from flake8_importpolicy.model.files import DEFAULT_CACHE_DIR

jsonschema = pytest.importorskip("jsonschema")

REPO = Path(__file__).resolve().parents[1]
SCHEMA_FILE = REPO / "flake8_importpolicy" / "schema" / "policy.schema.json"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def validator(schema: dict[str, Any]) -> Any:
    return jsonschema.Draft202012Validator(schema)


def _errors(validator: Any, data: object) -> list[str]:
    return sorted(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data))


def test_schema_is_a_valid_draft_2020_12_schema(schema: dict[str, Any]) -> None:
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_schema_is_package_data() -> None:
    shipped = resources.files("flake8_importpolicy") / "schema" / "policy.schema.json"
    assert shipped.is_file()
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    globs = config["options.package_data"]["flake8_importpolicy.schema"].replace(",", " ").split()
    assert any(fnmatch.fnmatch(SCHEMA_FILE.name, glob) for glob in globs)


def _shipped_policies() -> list[Path]:
    return [
        REPO / "policy.toml",
        REPO / "examples" / "cuda_fork" / "policy.toml",
        *sorted((REPO / "tests" / "fixtures").glob("*/policy.toml")),
        *sorted((REPO / "tests" / "fixtures_comparison").glob("*/policy.toml")),
    ]


SHIPPED = _shipped_policies()


@pytest.mark.parametrize("path", SHIPPED, ids=[str(p.relative_to(REPO)) for p in SHIPPED])
def test_shipped_policies_are_valid(validator: Any, path: Path) -> None:
    assert _errors(validator, tomllib.loads(path.read_text(encoding="utf-8"))) == []


def test_the_example_in_docs_policy_md_is_valid(validator: Any) -> None:
    text = (REPO / "docs" / "policy.md").read_text(encoding="utf-8")
    section = text.split("## Schema (version 1)", 1)[1]
    match = re.search(r"```toml\n(.*?)```", section, re.DOTALL)
    assert match is not None
    data = tomllib.loads(match.group(1))
    assert {"settings", "heavy", "heavy-calls", "light", "ignore"} <= set(data)
    assert _errors(validator, data) == []


def test_the_shipped_schema_is_made_from_the_declaration() -> None:
    """Every key, its type, default and doc are declared once (config/keys.py); the shipped file is
    what config/reference.py makes of that declaration (``python tools/regenerate.py`` writes it)."""
    assert SCHEMA_FILE.read_text(encoding="utf-8") == format_schema(), \
        "policy.schema.json is stale: run python tools/regenerate.py"


def test_the_schema_knows_every_key_the_loader_accepts(schema: dict[str, Any]) -> None:
    defs = schema["$defs"]
    assert list(schema["properties"]) == list(POLICY.names)
    assert list(defs["settings"]["properties"]) == list(SETTINGS.names)
    assert list(defs["light"]["properties"]) == list(LIGHT.names)
    assert list(defs["ignore"]["properties"]) == list(IGNORE.names)
    settings = defs["settings"]["properties"]
    assert settings["external"]["enum"] == ["auto", "follow", "stop"]
    assert settings["external"]["default"] == "auto"
    assert settings["lazy-imports"]["enum"] == ["normal", "all", "none"]
    assert settings["cache-dir"]["default"] == DEFAULT_CACHE_DIR
    assert settings["call-depth"]["default"] == 3
    assert schema["properties"]["version"]["const"] == 1
    assert defs["light"]["required"] == ["reason"] == defs["ignore"]["required"]


def test_every_property_is_described(schema: dict[str, Any]) -> None:
    """Editors show the description on hover and in completion lists."""
    missing = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            for key, child in node.get("properties", {}).items():
                if "description" not in child and "$ref" not in child:
                    missing.append(f"{where}.{key}")
            for key, child in node.items():
                walk(child, f"{where}.{key}")
        elif isinstance(node, list):
            for number, child in enumerate(node):
                walk(child, f"{where}[{number}]")

    walk(schema, "")
    assert missing == []


_VALID = '''
[heavy]
"pkg.heavy" = "slow"
'''

# (name, TOML put before a valid [heavy] table, where the schema reports the error)
INVALID = [
    ("unknown top-level key", 'versoin = 1\n[light]\n"pkg.light" = "fast"\n', ""),
    ("unsupported version", 'version = 2\n[light]\n"pkg.light" = "fast"\n', "version"),
    ("unknown settings key", '[settings]\nexternl = "auto"\n[light]\n"pkg.light" = "fast"\n', "settings"),
    ("bad external", '[settings]\nexternal = "folow"\n[light]\n"pkg.light" = "fast"\n',
     "settings/external"),
    ("negative call-depth", '[settings]\ncall-depth = -1\n[light]\n"pkg.light" = "fast"\n',
     "settings/call-depth"),
    ("bad lazy-imports", '[settings]\nlazy-imports = "lazy"\n[light]\n"pkg.light" = "fast"\n',
     "settings/lazy-imports"),
    ("target version not 3.Y", '[settings]\ntarget-versions = ["2.7"]\n[light]\n"pkg.light" = "fast"\n',
     "settings/target-versions/0"),
    ("platform alias", '[settings]\nplatform = "macos"\n[light]\n"pkg.light" = "fast"\n',
     "settings/platform"),
    ("empty source-roots", '[settings]\nsource-roots = []\n[light]\n"pkg.light" = "fast"\n',
     "settings/source-roots"),
    ("light table without reason", '[light."pkg.light"]\nforbid = ["pkg.heavy"]\n', "light/pkg.light"),
    ("unknown light key", '[light."pkg.light"]\nreason = "fast"\nforbidd = ["pkg.heavy"]\n',
     "light/pkg.light"),
    ("empty light reason", '[light]\n"pkg.light" = "  "\n', "light/pkg.light"),
    ("unquoted dotted light table", '[light.pkg.light]\nreason = "fast"\n', "light/pkg"),
    ("forbid not an array", '[light."pkg.light"]\nreason = "fast"\nforbid = "pkg.heavy"\n',
     "light/pkg.light/forbid"),
    ("partial wildcard", '[light."pkg.li*"]\nreason = "fast"\n', "light"),
    ("empty pattern segment", '[light."pkg..light"]\nreason = "fast"\n', "light"),
    ("ignore without reason", '[light]\n"pkg.light" = "fast"\n[[ignore]]\nimport = "pkg.a -> pkg.b"\n',
     "ignore/0"),
    ("ignore without arrow", '[light]\n"pkg.light" = "fast"\n[[ignore]]\nimport = "pkg.a"\nreason = "r"\n',
     "ignore/0/import"),
    ("ignore as a table",
     '[light]\n"pkg.light" = "fast"\n[ignore]\nimport = "pkg.a -> pkg.b"\nreason = "r"\n', "ignore"),
]


@pytest.mark.parametrize(("snippet", "where"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_policies_are_rejected_by_both(
    validator: Any, tmp_path: Path, snippet: str, where: str
) -> None:
    text = snippet + _VALID
    errors = _errors(validator, tomllib.loads(text))
    assert errors, "the schema accepts it"
    assert any(e.startswith(f"{where}:") for e in errors), errors
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "policy.toml").write_text(text)
    with pytest.raises(PolicyError):
        load_policy(tmp_path / "policy.toml")


def test_a_valid_policy_is_accepted_by_both(validator: Any, tmp_path: Path) -> None:
    text = _VALID + '''
[heavy-calls]
"pkg.gpu.init" = "initialises the GPU"

[light]
"pkg.cli" = "starts on every command"

[light."pkg.**.ops"]
reason = "imported before fork"
forbid = ["pkg.heavy", "pkg.gpu.init", "other.module"]
allow = ["pkg.heavy.cheap"]
after-import = ["'pkg.heavy' not in sys.modules"]

[[ignore]]
import = "pkg.a -> pkg.b.**"
reason = "accepted"
'''
    assert _errors(validator, tomllib.loads(text)) == []
    (tmp_path / "policy.toml").write_text(text)
    load_policy(tmp_path / "policy.toml")


# (name, TOML, valid): the schema and the loader must give the same verdict on each.
AGREEMENT = [
    ("minimal", '[light]\n"pkg.light" = "fast"\n', True),
    ("non-ASCII module names", '[heavy]\n"café.модуль" = "slow"\n[light."数据.ops"]\nreason = "fast"\n'
     'forbid = ["café.модуль", "ünïcode.**"]\n', True),
    ("non-ASCII ignore sides", '[light]\n"pkg.light" = "fast"\n[[ignore]]\n'
     'import = "pkg.ünï:función -> café"\nreason = "r"\n', True),
    ("a name starting with a digit", '[heavy]\n"pkg.1st" = "slow"\n', False),
    ("a name with a dash", '[light]\n"my-pkg" = "fast"\n', False),
    ("version 1", "version = 1\n", True),
    ("version 1.0 (JSON has one number type)", "version = 1.0\n", True),
    ("version 1.5", "version = 1.5\n", False),
    ("version 2", "version = 2\n", False),
    ("version as a string", 'version = "1"\n', False),
    ("call-depth 2", "[settings]\ncall-depth = 2\n", True),
    ("call-depth 2.0 (JSON has one number type)", "[settings]\ncall-depth = 2.0\n", True),
    ("call-depth 2.5", "[settings]\ncall-depth = 2.5\n", False),
    ("call-depth true", "[settings]\ncall-depth = true\n", False),
    ("light table without reason", '[light."a"]\n', False),
    ("light table with a typo", '[light."a"]\nreason = "r"\nforbidd = ["x"]\n', False),
    ("light value a number", '[light]\n"a" = 1\n', False),
    ("forbid item a number", '[light."a"]\nreason = "r"\nforbid = [1]\n', False),
    ("ignore of a function node", '[[ignore]]\nimport = "pkg.env:setup -> torch"\nreason = "r"\n', True),
    ("ignore of a nested function", '[[ignore]]\nimport = "pkg.reg:register.<locals>.deco -> torch"\n'
     'reason = "r"\n', True),
    ("ignore of a heavy call", '[[ignore]]\nimport = "pkg.ops -> torch.cuda.init()"\nreason = "r"\n', True),
    ("ignore of a bad function name", '[[ignore]]\nimport = "pkg.env:set-up -> torch"\nreason = "r"\n',
     False),
    ("ignore with two arrows", '[[ignore]]\nimport = "a -> b -> c"\nreason = "r"\n', False),
    ("partial wildcard", '[heavy]\n"pkg.li*" = "slow"\n', False),
    ("extends a preset", 'extends = ["torch-cuda"]\n', True),
    ("extends not an array", 'extends = "torch-cuda"\n', False),
    ("extends an empty entry", 'extends = [""]\n', False),
    ("assume a call and a name", '[assume]\n"pkg.plat.current.is_rocm()" = false\n'
     '"pkg.envs.USE_V1" = true\n"pkg.envs.DEVICE" = "cuda"\n"pkg.gpu.count(0)" = 2\n', True),
    ("assume a float", '[assume]\n"pkg.envs.RATIO" = 0.5\n', False),
    ("assume an array", '[assume]\n"pkg.envs.X" = [1]\n', False),
    ("assume a bare name", '[assume]\n"DEBUG" = true\n', False),
    ("assume a wildcard", '[assume]\n"pkg.*.X" = true\n', False),
    ("assume environ", '[assume.environ]\nVLLM_USE_V1 = "1"\nCUDA_VISIBLE_DEVICES = false\n', True),
    ("assume environ true", '[assume.environ]\nVLLM_USE_V1 = true\n', False),
    ("assume environ a number", '[assume.environ]\nVLLM_USE_V1 = 1\n', False),
]


@pytest.mark.parametrize(("text", "valid"), [c[1:] for c in AGREEMENT], ids=[c[0] for c in AGREEMENT])
def test_schema_and_loader_agree(validator: Any, tmp_path: Path, text: str, valid: bool) -> None:
    schema_errors = _errors(validator, tomllib.loads(text))
    (tmp_path / "policy.toml").write_text(text, encoding="utf-8")
    try:
        load_policy(tmp_path / "policy.toml")
        loader_error = ""
    except PolicyError as exc:
        loader_error = str(exc)
    assert (schema_errors == [], loader_error == "") == (valid, valid), (schema_errors, loader_error)


def test_light_errors_name_the_branch(schema: dict[str, Any], validator: Any) -> None:
    """``[light."a"]`` without a reason says what is missing (not "not valid under any of the
    schemas"), and both forms of a light entry carry a title for the editor's hover."""
    errors = _errors(validator, tomllib.loads('[light."a"]\n'))
    assert errors == ["light/a: 'reason' is a required property"]
    entry = schema["properties"]["light"]["additionalProperties"]
    assert entry["then"]["title"] and entry["else"]["title"] and entry["description"]
    assert schema["$defs"]["patterns"]["items"]["description"]
