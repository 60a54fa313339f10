import os

SOURCE = os.environ.get("APP_NEVER_SET", "import app.heavy")
exec(SOURCE)
