"""Runs inside a sandbox: relay 127.0.0.1:PORT to the egress proxy's unix socket, then
run the command.

Usage: ``python3 -I -S forwarder.py SOCKET PORT -- COMMAND...``; or, as ssh's
ProxyCommand, ``forwarder.py --connect SOCKET HOST PORT`` (one tunnel on stdin and
stdout, the proxy's refusal on stderr). Standard library
only (it runs on whatever Python the sandbox has). The listener is bound before
the command starts, so the command's first connection finds it. The relay lives
in a grandchild that leaves when the command (and whatever inherited its pipe)
is gone; the command keeps its own pid, stdin, stdout, stderr and exit status.

The relay is one thread and one ``selectors`` loop (epoll where there is one, so
descriptors past 1024 are no matter): a thread per connection would spend the
sandbox's address space (each thread reserves its stack and a malloc arena
against ``RLIMIT_AS``) and its process ceiling, and the first thread refused
would end the relay for the rest of the call. How many connections may be open
at once is the proxy's to say: it answers one over its limit with the reason.
A connection that fails ends alone; a descriptor shortage pauses accepting until
a connection closes; the relay never ends while the command lives.
"""

from __future__ import annotations

import _socket
import errno
import os
import sys

# The relay's modules, loaded in the relay (and the ssh tunnel) only: the command's own
# start waits for the listener alone, which needs the bare socket module. Loading these
# (enum, collections, functools...) took about half of the forwarder's start; typing
# alone would take more than the rest, so type checkers get their own constant.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import contextlib
    import selectors
    import socket
    import threading


def _relay_modules() -> None:
    global contextlib, selectors, socket, threading
    import contextlib
    import selectors
    import socket
    import threading


CHUNK = 65536
CONNECT_SECONDS = 10.0
PAUSE_SECONDS = 0.5
# accept() failing for want of descriptors or memory: wait for a connection to close.
_SHORTAGE = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class _Side:
    """One socket of a link: what waits to be written to it, and whether it said EOF."""

    __slots__ = ("ended", "outbound", "shut", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.outbound = b""
        self.ended = False  # read EOF from this socket
        self.shut = False  # sent EOF to this socket


class _Link:
    """A client on the sandbox's loopback and its connection to the proxy."""

    __slots__ = ("closed", "sides")

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.sides = (_Side(client), _Side(upstream))
        self.closed = False

    def other(self, side: _Side) -> _Side:
        return self.sides[1] if side is self.sides[0] else self.sides[0]


class _Relay:
    def __init__(self, listener: socket.socket, path: str, alive: int) -> None:
        self.listener = listener
        self.path = path
        self.alive = alive
        self.selector = selectors.DefaultSelector()
        self.accepting = True
        self.links: set[_Link] = set()
        listener.setblocking(False)
        self.selector.register(listener, selectors.EVENT_READ, None)
        self.selector.register(alive, selectors.EVENT_READ, None)

    def serve(self) -> None:
        while True:
            ready = self.selector.select(None if self.accepting else PAUSE_SECONDS)
            if not ready and not self.accepting:
                self._resume()  # descriptors may have come free elsewhere: try again
            for key, mask in ready:
                if key.fileobj == self.alive:
                    return  # the command and everything holding its pipe ended
                if key.fileobj is self.listener:
                    self._accept()
                    continue
                link, side = key.data
                if link.closed:
                    continue
                try:
                    if mask & selectors.EVENT_WRITE:
                        self._flush(link, side)
                    if mask & selectors.EVENT_READ and not link.closed:
                        self._read(link, side)
                except OSError:
                    self._close(link)
                    continue
                if not link.closed:
                    self._settle(link)

    def _accept(self) -> None:
        try:
            client, _ = self.listener.accept()
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno in _SHORTAGE:
                self._pause()
            return
        try:
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError as exc:
            client.close()
            if exc.errno in _SHORTAGE:
                self._pause()
            return
        try:
            upstream.settimeout(CONNECT_SECONDS)
            upstream.connect(self.path)
            client.setblocking(False)
            upstream.setblocking(False)
        except OSError:
            client.close()
            upstream.close()
            return
        link = _Link(client, upstream)
        self.links.add(link)
        for side in link.sides:
            self.selector.register(side.sock, selectors.EVENT_READ, (link, side))

    def _pause(self) -> None:
        if self.accepting:
            self.selector.unregister(self.listener)
            self.accepting = False

    def _resume(self) -> None:
        if not self.accepting:
            self.selector.register(self.listener, selectors.EVENT_READ, None)
            self.accepting = True

    def _read(self, link: _Link, side: _Side) -> None:
        other = link.other(side)
        try:
            data = side.sock.recv(CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        if data:
            other.outbound += data
            self._flush(link, other)
        else:
            side.ended = True

    def _flush(self, link: _Link, side: _Side) -> None:
        while side.outbound:
            try:
                sent = side.sock.send(side.outbound)
            except (BlockingIOError, InterruptedError):
                return
            side.outbound = side.outbound[sent:]

    def _settle(self, link: _Link) -> None:
        """Pass on EOFs, close a finished link, and ask only for the events it can use."""
        for side in link.sides:
            other = link.other(side)
            if side.ended and not other.outbound and not other.shut:
                other.shut = True
                with contextlib.suppress(OSError):
                    other.sock.shutdown(socket.SHUT_WR)
        if all(side.shut for side in link.sides):
            self._close(link)
            return
        for side in link.sides:
            events = 0
            # Read from a side only while what it sent last has left (backpressure).
            if not side.ended and not link.other(side).outbound:
                events |= selectors.EVENT_READ
            if side.outbound:
                events |= selectors.EVENT_WRITE
            self._watch(side.sock, events, (link, side))

    def _watch(self, sock: socket.socket, events: int, data: object) -> None:
        try:
            key = self.selector.get_key(sock)
        except KeyError:
            if events:
                self.selector.register(sock, events, data)
            return
        if not events:
            self.selector.unregister(sock)
        elif key.events != events:
            self.selector.modify(sock, events, data)

    def _close(self, link: _Link) -> None:
        if link.closed:
            return
        link.closed = True
        self.links.discard(link)
        for side in link.sides:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(side.sock)
            side.sock.close()
        self._resume()


def _serve(listening_fd: int, path: str, alive: int) -> None:
    _relay_modules()
    _Relay(socket.socket(fileno=listening_fd), path, alive).serve()


def connect(path: str, host: str, port: str) -> None:
    """One CONNECT tunnel to ``host:port`` relayed over stdin and stdout."""
    _relay_modules()
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    upstream.connect(path)
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    upstream.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        data = upstream.recv(1)
        if not data:
            break
        head += data
    if not head.startswith(b"HTTP/1.1 200"):
        reason = [line for line in head.split(b"\r\n") if line.startswith(b"X-Synthorg-Egress")]
        sys.stderr.write(((reason or head.split(b"\r\n")[:1])[0]).decode("utf-8", "replace"))
        sys.stderr.write("\n")
        os._exit(1)

    def upward() -> None:
        while True:
            data = os.read(0, CHUNK)
            if not data:
                break
            upstream.sendall(data)
        with contextlib.suppress(OSError):
            upstream.shutdown(socket.SHUT_WR)

    threading.Thread(target=upward, daemon=True).start()
    while True:
        data = upstream.recv(CHUNK)
        if not data:
            break
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    os._exit(0)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--connect"] and len(argv) == 4:
        connect(argv[1], argv[2], argv[3])
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: forwarder.py SOCKET PORT -- COMMAND...\n")
        os._exit(2)
    path, port, command = argv[0], int(argv[1]), argv[3:]
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    alive_read, alive_write = os.pipe()
    child = os.fork()
    if child == 0:
        if os.fork() == 0:
            os.close(alive_write)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            _serve(listener.detach(), path, alive_read)
        os._exit(0)
    os.waitpid(child, 0)
    listener.close()
    os.close(alive_read)
    os.set_inheritable(alive_write, True)
    try:
        os.execvp(command[0], command)  # noqa: S606 - the sandboxed command, as given
    except OSError as exc:
        sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
