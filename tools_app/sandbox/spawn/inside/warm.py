"""The warm interpreter: run ``python3 -I -S -c SOURCE ARGS`` inside a forked spawn server.

Loaded by ``spawn_server`` (standard library only). The child has already
been confined (cgroup, descriptors, directory, rlimits, session, user); this
sets up what a fresh interpreter would have, runs the compiled SOURCE as
``__main__`` and returns the exit status that interpreter would have
returned: ``sys.argv``, ``sys.executable``, ``os.environ`` (plus what the
interpreter added to its own environment while starting, e.g. locale
coercion), new standard streams on 0/1/2 with the same encoding, errors and
buffering, a new ``__main__``; ``SystemExit`` codes honoured, an uncaught
exception printed by ``sys.excepthook`` with the command's own frames (status
1), then what interpreter shutdown does: join threads, run ``atexit``, flush
(a failed stdout flush is status 120).
"""

import builtins
import contextlib
import io
import os
import signal
import sys

STDIO_NAMES = ("<stdin>", "<stdout>", "<stderr>")


class WarmInterpreter:
    """What a fresh ``python3 -I -S`` would look like, captured in the server at start."""

    def __init__(self, startup_keys):
        self.startup_additions = {k: v for k, v in os.environ.items() if k not in startup_keys}
        self.stdio = [
            (sys.stdin.encoding, sys.stdin.errors),
            (sys.stdout.encoding, sys.stdout.errors),
            (sys.stderr.encoding, sys.stderr.errors),
        ]
        self.main_template = {
            "__name__": "__main__",
            "__doc__": None,
            "__package__": None,
            "__loader__": sys.modules["_frozen_importlib"].BuiltinImporter,
            "__spec__": None,
        }

    def run(self, code, args, env, executable):
        """Run ``code`` as ``python3 -I -S -c`` would; return its exit status."""
        env = dict(env)
        for name, value in self.startup_additions.items():
            env.setdefault(name, value)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = ["-c", *args]
        sys.executable = executable
        # A fresh interpreter ignores these two (the server has them at default).
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        streams = []
        for fd, (encoding, errors) in enumerate(self.stdio):
            buffer = open(fd, "wb" if fd else "rb", closefd=False)  # noqa: SIM115
            buffer.raw.name = STDIO_NAMES[fd]  # type: ignore[attr-defined]
            line = fd == 2 or os.isatty(fd)
            streams.append(
                io.TextIOWrapper(
                    buffer, encoding=encoding, errors=errors, newline="\n", line_buffering=line
                )
            )
        sys.stdin, sys.stdout, sys.stderr = streams
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams  # type: ignore[misc]
        main = type(sys)("__main__")
        main.__dict__.update(self.main_template, __annotations__={}, __builtins__=builtins)
        sys.modules["__main__"] = main
        status = 0
        interrupted = False
        try:
            exec(code, main.__dict__)  # noqa: S102 - this is the command the call asked to run
        except SystemExit as exc:
            status = _system_exit_status(exc)
        except BaseException as exc:
            interrupted = isinstance(exc, KeyboardInterrupt)
            # Show the traceback from the command's own frames, not this one.
            tb = exc.__traceback__
            exc.__traceback__ = tb.tb_next if tb is not None else None
            sys.excepthook(type(exc), exc, exc.__traceback__)
            status = 1
        status = _finalize(status)
        if interrupted:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        return status & 0xFF


def _system_exit_status(exc):
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    with contextlib.suppress(Exception):
        sys.stderr.write(f"{code}\n")
    return 1


def _finalize(status):
    """What interpreter shutdown does: threads, atexit, flushing the streams."""
    threading = sys.modules.get("threading")
    if threading is not None:
        # Shutdown carries on past a failure, as the interpreter's does.
        with contextlib.suppress(Exception):
            threading._shutdown()
    import atexit

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except Exception:  # a failed flush at exit means status 120
        status = 120
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    return status
