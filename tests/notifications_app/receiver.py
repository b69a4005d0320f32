"""A loopback HTTP receiver of the tests' own: records what it is sent, answers as told.

Each request takes the next behaviour from the list (the last one repeats): ``200``
or any status, ``redirect:<url>``, ``drip`` (200, then a body one byte at a time that
never ends) or ``hang`` (no answer at all). It stops by itself when the test ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A behaviour that never ends is cut here, so the receiver always stops.
LONGEST_SECONDS = 30.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    behaviours: list[str]
    received: list[Received] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    def next_behaviour(self) -> str:
        index = min(len(self.received) - 1, len(self.behaviours) - 1)
        return self.behaviours[index]


@contextmanager
def receiver(*behaviours: str) -> Iterator[Receiver]:
    state = Receiver(url="", behaviours=list(behaviours) or ["200"])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            state.received.append(Received(self.path, dict(self.headers.items()), body))
            behaviour = state.next_behaviour()
            if behaviour == "hang":
                state.stopping.wait(LONGEST_SECONDS)
                return
            if behaviour == "drip":
                self.send_response(200)
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                while not state.stopping.wait(0.2):
                    try:
                        self.wfile.write(b".")
                        self.wfile.flush()
                    except OSError:
                        return
                return
            if behaviour.startswith("redirect:"):
                self.send_response(302)
                self.send_header("Location", behaviour.removeprefix("redirect:"))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(int(behaviour))
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stopping.set()
        server.shutdown()
        server.server_close()
