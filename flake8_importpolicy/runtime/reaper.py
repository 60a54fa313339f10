"""The keeper of one verify subprocess: it outlives nothing it started. A script, standard library only.

Run by path, never imported (Linux)::

    python -I -S reaper.py MEMORY_BYTES -- COMMAND...

:mod:`flake8_importpolicy.runtime.run` starts it in a session of its own instead of ``COMMAND`` (the
recorder's interpreter). It makes itself the *child subreaper* of everything ``COMMAND`` starts
(``prctl(PR_SET_CHILD_SUBREAPER)``, Linux 3.4+), so that a process the imported code leaves behind
— a daemon that forked twice and left the session with ``setsid()``, so that no process group kill
reaches it — becomes its child instead of init's. It runs ``COMMAND`` with the data segment limited
to ``MEMORY_BYTES`` (``RLIMIT_DATA``: the heap and private writable mappings, not the address space
that a library merely reserves; 0: no limit), waits for it, then kills every process still below
it, the orphans that reached it included, and reaps them. On ``SIGTERM`` (verify's timeout) it does
the same at once. It exits as ``COMMAND`` did: the same status, or killed by the same signal.

If ``COMMAND`` cannot be executed, it writes ``importpolicy-reaper: cannot run ...`` to stderr and
exits with status 127.
"""

import os
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
CANNOT_RUN = 127


def main() -> None:
    limit = int(sys.argv[1])
    command = sys.argv[3:]
    _become_subreaper()
    child = os.fork()
    if child == 0:
        _exec(command, limit)
    # this process keeps no descriptor of the verifier's: its events pipe ends when the command's
    # processes are gone, not when this one is
    os.closerange(3, _max_fd())
    signal.signal(signal.SIGTERM, lambda number, frame: _stop(child))
    status = _wait(child)
    _kill_descendants()
    _exit_as(status)


def _become_subreaper() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except Exception:  # no ctypes, or not Linux: what the process group kill reaches is all
        pass


def _exec(command: "list[str]", limit: int) -> None:
    try:
        if limit > 0:
            import resource

            resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        os.execvp(command[0], command)
    except BaseException as exc:
        try:
            os.write(2, f"importpolicy-reaper: cannot run {command[0]}: {exc}\n".encode())
        finally:
            os._exit(CANNOT_RUN)


def _max_fd() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (ValueError, OSError):
        return 65536


def _wait(child: int) -> int:
    while True:
        try:
            pid, status = os.waitpid(child, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            return 0
        if pid == child:
            return status


def _stop(child: int) -> None:
    """Verify's timeout: the command and everything below it go now."""
    try:
        os.kill(child, signal.SIGKILL)
    except OSError:
        pass
    _kill_descendants()
    _exit_as(-1)


def _children() -> "set[int]":
    """This process's children: ``/proc/self/task/*/children`` (Linux), else ``/proc/*/stat``."""
    me = os.getpid()
    found: "set[int]" = set()
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as handle:
                found.update(int(pid) for pid in handle.read().split())
        return found
    except OSError:
        pass
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if len(fields) > 1 and fields[1] == str(me):
                found.add(int(name))
    return found


def _kill_descendants() -> None:
    """Kill every child and reap it; the orphans of each come to this process (the subreaper) and
    are killed in turn, until none is left."""
    for _ in range(10_000):  # each round kills at least one process; a fork bomb is outpaced
        children = _children()
        if not children:
            return
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except (ChildProcessError, InterruptedError):
                pass


def _exit_as(status: int) -> None:
    """Exit as the command did (``status`` from ``waitpid``); -1: killed, as verify asked."""
    number = signal.SIGKILL if status < 0 else os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    if number:
        if number not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                import resource

                resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file of this process
            except (ImportError, ValueError, OSError):
                pass
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
