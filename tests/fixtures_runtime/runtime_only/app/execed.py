import codecs

SOURCE = codecs.decode("vzcbeg ncc.urnil", "rot13")  # "import app.heavy", not a literal
exec(SOURCE)
