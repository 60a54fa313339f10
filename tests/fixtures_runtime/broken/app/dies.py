import os
import signal

if hasattr(signal, "SIGKILL"):
    os.kill(os.getpid(), signal.SIGKILL)
os._exit(3)
