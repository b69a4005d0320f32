"""Runs inside the sandbox: one agent's virtual desktop, kept for later calls.

Usage: ``python3 -I -S -c SOURCE SETUP-JSON``. Standard library only: the
console's virtual environment is not visible inside the sandbox.

It starts Xvfb on a display of the sandbox's own (its own network namespace, so
the display's sockets are reachable by nothing outside; no TCP listener), starts
the first program on it, then serves requests on the control socket the worker
bound in: one JSON line in, one JSON line out, one request per connection, one
at a time. Input goes through xdotool (the XTEST extension), pictures through
scrot into the workspace. It ends when every program it started has ended
(the next request is answered ``desktop_app_not_running``), after ``idle_seconds``
without a request, or at ``max_age_seconds``; ending it ends the sandbox's pid
namespace, and with it everything on the display.

The wall is the sandbox, not this program: what runs on the display belongs to
the agent and may talk to this program or replace it. The worker trusts no
answer beyond this agent's own session (screenshots are checked again there).
"""

import contextlib
import hashlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

WORKSPACE = "/workspace"
TMP = "/tmp"  # noqa: S108 - the sandbox's own private tmpfs
SCREENSHOT_DIR = ".synthorg/screenshots"
NOT_RUNNING = "desktop_app_not_running"
REQUEST_MAX_BYTES = 64 * 1024
# Seconds one xdotool or scrot run may take.
STEP_SECONDS = 20.0
BUTTONS = {"left": "1", "middle": "2", "right": "3"}


def typing_seconds(characters, delay_ms):
    """How long typing may take: each key's delay, twice over, beyond one step's time."""
    return STEP_SECONDS + 2 * characters * (delay_ms + 5) / 1000


def answer_line(answer):
    return (json.dumps(answer, separators=(",", ":")) + "\n").encode()


def failure(code, message):
    return {"ok": False, "code": code, "message": message}


class Desktop:
    """The display, the programs on it, and the tools that drive it."""

    def __init__(self, setup):
        self.setup = setup
        self.display = ""
        self.xvfb = None
        self.programs = []
        self.started = time.monotonic()
        self.env = {
            "PATH": setup["path"],
            "HOME": os.environ.get("HOME", TMP),
            "TMPDIR": TMP,
            "LANG": "C.UTF-8",
        }

    # -- bring-up ----------------------------------------------------------------

    def start_display(self):
        """Xvfb on a free display; its number comes back on a pipe once it serves."""
        read_end, write_end = os.pipe()
        screen = f"{self.setup['width']}x{self.setup['height']}x24"
        argv = [
            self.setup["xvfb"], "-displayfd", str(write_end), "-screen", "0", screen,
            "-nolisten", "tcp", "-noreset", "-nocursor",
        ]  # fmt: skip
        log = open(os.path.join(TMP, "xvfb.log"), "wb")  # noqa: SIM115 - kept for the display's life
        self.xvfb = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(write_end,),
            env=self.env, cwd=TMP,
        )  # fmt: skip
        os.close(write_end)
        number = b""
        deadline = time.monotonic() + self.setup["start_seconds"]
        while b"\n" not in number and time.monotonic() < deadline:
            ready, _, _ = select.select([read_end], [], [], 0.2)
            if ready:
                chunk = os.read(read_end, 64)
                if not chunk:
                    break
                number += chunk
        os.close(read_end)
        if not number.strip().isdigit():
            why = _tail(os.path.join(TMP, "xvfb.log"))
            raise RuntimeError("the virtual display did not start: " + why)
        self.display = ":" + number.strip().decode()
        self.env["DISPLAY"] = self.display

    def launch(self, argv, env):
        """Start ``argv`` on the display; its pid and the title of its first window."""
        if len(self.programs) >= self.setup["max_programs"]:
            return failure(
                "LIMIT_EXCEEDED",
                f"this desktop runs {self.setup['max_programs']} programs already",
            )
        program_env = dict(self.env)
        program_env.update(env)
        program_env["DISPLAY"] = self.display
        before = self.windows()
        log = open(os.path.join(TMP, f"program-{len(self.programs)}.log"), "wb")  # noqa: SIM115
        try:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=program_env,
                cwd=WORKSPACE,
            )  # fmt: skip
        except OSError as exc:
            return failure("LAUNCH_FAILED", f"cannot start {argv[0]}: {exc.strerror}")
        finally:
            log.close()
        self.programs.append(process)
        window, title = self.first_window(process, before)
        if process.poll() is not None and window is None:
            return failure(
                "LAUNCH_FAILED",
                f"{argv[0]} ended at once (exit {process.returncode}) without a window",
            )
        if window is not None:
            # No window manager: give the new window the keyboard (one unmapped again
            # at once refuses it; typing then goes where the pointer is).
            self.xdotool("windowfocus", window, check=False)
        return {"ok": True, "pid": process.pid, "window_title": title, "display": self.display}

    def windows(self):
        """The visible top-level windows now."""
        found = self.xdotool(
            "search", "--onlyvisible", "--maxdepth", "1", "--name", "", check=False
        )
        return set(found.split())

    def first_window(self, process, before):
        """The program's first window: by its pid where it says it, else the first new one."""
        deadline = time.monotonic() + self.setup["window_seconds"]
        while time.monotonic() < deadline and process.poll() is None:
            # Only a mapped window can take the keyboard.
            found = self.xdotool("search", "--onlyvisible", "--pid", str(process.pid), check=False)
            windows = found.split() or sorted(self.windows() - before)
            if windows:
                title = self.xdotool("getwindowname", windows[-1], check=False).strip()
                return windows[-1], title
            time.sleep(0.1)
        return None, ""

    # -- requests ----------------------------------------------------------------

    def alive(self):
        if self.xvfb is None or self.xvfb.poll() is not None:
            return False
        return any(p.poll() is None for p in self.programs)

    def xdotool(self, *words, check=True, seconds=STEP_SECONDS):
        done = subprocess.run(
            [self.setup["xdotool"], *words], stdin=subprocess.DEVNULL, capture_output=True,
            env=self.env, timeout=seconds, check=False,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise RuntimeError("xdotool: " + done.stderr.decode(errors="replace")[-300:])
        return done.stdout.decode(errors="replace")

    def handle(self, request):
        action = request.get("action")
        if action == "launch":
            return self.launch(list(request["argv"]), dict(request.get("env") or {}))
        if not self.alive():
            return failure(NOT_RUNNING, "the program on this desktop has ended")
        if action == "click":
            words = ["mousemove", "--sync", str(request["x"]), str(request["y"]), "click"]
            if request.get("double"):
                words += ["--repeat", "2", "--delay", "80"]
            self.xdotool(*words, BUTTONS[request.get("button", "left")])
            return {"ok": True}
        if action == "type":
            text = request["text"]
            delay = self.setup["type_delay_ms"]
            seconds = typing_seconds(len(text), delay)
            self.xdotool("type", "--delay", str(delay), "--", text, seconds=seconds)
            return {"ok": True, "characters": len(text)}
        if action == "key":
            self.xdotool("key", "--delay", "40", "--", *request["keys"])
            return {"ok": True}
        if action == "scroll":
            for button, steps in (("5", request["dy"]), ("7", request.get("dx", 0))):
                if steps:
                    button = button if steps > 0 else str(int(button) - 1)
                    self.xdotool("click", "--repeat", str(abs(steps)), "--delay", "30", button)
            return {"ok": True}
        if action == "screenshot":
            return self.screenshot(request["name"])
        return failure("INVALID_ARGUMENT", "unknown action")

    def screenshot(self, name):
        folder = os.path.join(WORKSPACE, SCREENSHOT_DIR)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, name)
        done = subprocess.run(
            [self.setup["scrot"], "--overwrite", path], stdin=subprocess.DEVNULL,
            capture_output=True, env=self.env, timeout=STEP_SECONDS, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            return failure("SCREENSHOT_FAILED", done.stderr.decode(errors="replace")[-300:])
        with open(path, "rb") as picture:
            data = picture.read()
        return {
            "ok": True,
            "path": SCREENSHOT_DIR + "/" + name,
            "sha256": hashlib.sha256(data).hexdigest(),
        }

    def end(self):
        for process in [*self.programs, self.xvfb]:
            if process is not None and process.poll() is None:
                with contextlib.suppress(OSError):
                    process.kill()


def _tail(path):
    with contextlib.suppress(OSError), open(path, "rb") as log:
        return log.read()[-500:].decode(errors="replace")
    return ""


def serve(desktop, listener, setup):
    """Answer requests until the desktop is spent: idle, too old, or its programs ended."""
    last = time.monotonic()
    while True:
        now = time.monotonic()
        left = min(
            setup["idle_seconds"] - (now - last),
            setup["max_age_seconds"] - (now - desktop.started),
        )
        if left <= 0:
            return
        ready, _, _ = select.select([listener], [], [], min(left, 1.0))
        if not ready:
            if not desktop.alive():
                return
            continue
        connection, _ = listener.accept()
        with connection:
            connection.settimeout(STEP_SECONDS)
            answer = _one_request(desktop, connection)
            with contextlib.suppress(OSError):
                connection.sendall(answer_line(answer))
        last = time.monotonic()
        if answer.get("code") == NOT_RUNNING:
            return


def _one_request(desktop, connection):
    data = b""
    try:
        while b"\n" not in data and len(data) <= REQUEST_MAX_BYTES:
            chunk = connection.recv(65536)
            if not chunk:
                break
            data += chunk
        request = json.loads(data.split(b"\n", 1)[0])
    except (OSError, ValueError):
        return failure("INVALID_ARGUMENT", "the request could not be read")
    try:
        return desktop.handle(request)
    except subprocess.TimeoutExpired:
        return failure("TIMED_OUT", f"the desktop did not do it within {STEP_SECONDS:g}s")
    except (RuntimeError, KeyError, TypeError, ValueError) as exc:
        return failure("DESKTOP_FAILED", str(exc)[-500:])


def main():
    setup = json.loads(sys.argv[1])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    desktop = Desktop(setup)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(setup["control"])
        os.umask(0o077)
        listener.bind(setup["control"])
        listener.listen(8)
        try:
            desktop.start_display()
            first = desktop.launch(setup["argv"], setup["env"])
        except (RuntimeError, OSError) as exc:
            first = failure("LAUNCH_FAILED", str(exc)[-500:])
        # The worker that started this reads the first answer on stdout.
        sys.stdout.write(answer_line(first).decode())
        sys.stdout.flush()
        if first.get("ok"):
            serve(desktop, listener, setup)
    finally:
        desktop.end()
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(setup["control"])


if __name__ == "__main__":
    main()
