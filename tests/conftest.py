"""pytest configuration shared by the tests: hypothesis profiles.

``python -m pytest tests/test_property.py --hypothesis-profile=long`` runs the property-based tests with
500 examples instead of the default profile's handful (see tests/test_property.py). The profile is
registered only when a profile is asked for, so a normal run does not import hypothesis here.
"""

from __future__ import annotations

import pytest

LONG_EXAMPLES = 500


@pytest.hookimpl(tryfirst=True)  # before hypothesis's own pytest_configure loads the profile
def pytest_configure(config: pytest.Config) -> None:
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
