import json


def helper():
    import app.heavy  # deferred: runs only when called

    return json.dumps(app.heavy.X)
