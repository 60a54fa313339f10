SOURCE = "import app.heavy"

exec(SOURCE)
