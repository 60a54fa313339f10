import os

if os.cpu_count() == -1:  # never true, and not decidable statically
    import app.heavy  # noqa: F401
