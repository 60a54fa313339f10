import lazy_loader

heavy = lazy_loader.load("app.heavy")
