import app.heavy  # the engine worker may pay for app.heavy: it is not a light module
