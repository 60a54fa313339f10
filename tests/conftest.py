"""pytest configuration shared by the tests: hypothesis profiles, no colour asked for, and a user-level
cache of the run's own.

The user-level facts cache (``$IMPORTPOLICY_CACHE_DIR``) is a fresh temporary directory for each test
run, inherited by every process a test starts: the suite never reads or writes the user's own cache,
and a run never takes another run's entries for its own. A test that needs its own sets the variable.

``python -m pytest tests/test_property.py --hypothesis-profile=long`` runs the property-based tests with
500 examples instead of the default profile's handful (see tests/test_property.py). The profile is
registered only when a profile is asked for, so a normal run does not import hypothesis here.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

LONG_EXAMPLES = 500

# The text report is coloured when FORCE_COLOR is set (output/style.py), also in a pipe: the tests
# that compare its text must not depend on the caller's environment; tests/test_cli.py sets both.
for _variable in ("FORCE_COLOR", "NO_COLOR"):
    os.environ.pop(_variable, None)


@pytest.hookimpl(tryfirst=True)  # before hypothesis's own pytest_configure loads the profile
def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # pytest-xdist workers share the controller's
        user_cache = tempfile.mkdtemp(prefix="importpolicy-user-cache-")
        os.environ["IMPORTPOLICY_CACHE_DIR"] = user_cache
        config.add_cleanup(lambda: shutil.rmtree(user_cache, ignore_errors=True))
    try:
        wanted = config.getoption("--hypothesis-profile")
    except ValueError:  # hypothesis's pytest plugin is disabled (-p no:hypothesispytest)
        return
    if wanted:
        from hypothesis import HealthCheck, settings

        settings.register_profile(
            "long",
            max_examples=LONG_EXAMPLES,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
