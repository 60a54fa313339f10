import os

if os.environ.get("IMPORTPOLICY_FIXTURE_NEVER_SET"):
    import app.heavy  # noqa: F401
