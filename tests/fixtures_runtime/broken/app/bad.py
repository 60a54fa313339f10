import app.heavy

raise RuntimeError("boom at import time")
