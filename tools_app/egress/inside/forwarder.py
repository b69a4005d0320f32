"""Runs inside a sandbox: relay 127.0.0.1:PORT to the egress proxy's unix socket, then
run the command.

Usage: ``python3 -I -S forwarder.py SOCKET PORT -- COMMAND...``; or, as ssh's
ProxyCommand, ``forwarder.py --connect SOCKET HOST PORT`` (one tunnel on stdin and
stdout, the proxy's refusal on stderr). Standard library
only (it runs on whatever Python the sandbox has). The listener is bound before
the command starts, so the command's first connection finds it. The relay lives
in a grandchild that leaves when the command (and whatever inherited its pipe)
is gone; the command keeps its own pid, stdin, stdout, stderr and exit status.
"""

import contextlib
import os
import select
import socket
import sys
import threading

CHUNK = 65536


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while True:
            data = source.recv(CHUNK)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


def _serve_one(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, path: str, alive: int) -> None:
    while True:
        ready, _, _ = select.select([listener.fileno(), alive], [], [])
        if alive in ready:
            return  # the command and everything holding its pipe ended
        client, _ = listener.accept()
        threading.Thread(target=_serve_one, args=(client, path), daemon=True).start()


def connect(path: str, host: str, port: str) -> None:
    """One CONNECT tunnel to ``host:port`` relayed over stdin and stdout."""
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
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
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
            _serve(listener, path, alive_read)
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
