import lazy_loader

heavy = lazy_loader.load("app.heavy")
VALUE = heavy.X  # first attribute use: app.heavy executes now
