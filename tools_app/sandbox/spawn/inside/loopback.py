"""A proxied call's network, made by the spawn server's child before bubblewrap runs.

Standard library only: the spawn server loads this file beside itself. For a
namespace-sandbox call whose commands may reach the network through the call's
egress proxy, the child, still root, leaves the worker's network namespace for a
new one whose only interface is its loopback, and brings that up. Then, as the
sandbox user, it binds the forwarder's listener on that loopback and forks the
relay (``tools_app/egress/inside/forwarder.py``, loaded once by the server, so
no interpreter starts for it) before it runs bubblewrap, which then makes every
namespace but this one. The command finds the listener at once, as the forwarder
run inside the sandbox gave it, without a Python interpreter started ahead of
every proxied command.

The relay is a process of the call: in its cgroup and process group, under its
rlimits, as the sandbox user; it ends when the command and every holder of its
pipe are gone, and the worker kills what is left of the group at the end. It is
outside the sandbox's pid namespace, so the command can neither see nor signal it.
"""

import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import struct

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
PR_SET_NAME = 15
RELAY_NAME = b"egress-relay"
# struct ifreq: the interface's name, then (here) its flags; 40 bytes in all.
_IFREQ = struct.Struct("16sH22x")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.unshare.argtypes = (ctypes.c_int,)
_libc.prctl.argtypes = (
    ctypes.c_int,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
)


def enter_network_namespace():
    """Leave the worker's network for a new namespace with only its loopback, up."""
    worker_network = os.stat("/proc/self/ns/net").st_ino
    if _libc.unshare(CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare the network namespace: {os.strerror(err)}")
    # Bubblewrap is told to keep this namespace: never let that be the worker's.
    if os.stat("/proc/self/ns/net").st_ino == worker_network:
        raise OSError(0, "the network namespace did not change")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        asked = fcntl.ioctl(control, SIOCGIFFLAGS, _IFREQ.pack(b"lo", 0))
        _, flags = _IFREQ.unpack(asked)
        fcntl.ioctl(control, SIOCSIFFLAGS, _IFREQ.pack(b"lo", flags | IFF_UP))


def start_relay(serve, socket_path, port):
    """Bind ``127.0.0.1:port`` and fork the relay to ``socket_path`` behind it.

    ``serve(listening_fd, socket_path, alive_fd)`` is the forwarder's relay loop.
    Returns the write end of the relay's life pipe, inheritable: the command holds
    it, and the relay ends when every holder has closed it.
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        alive_read, alive_write = os.pipe()
        pid = os.fork()
    except BaseException:
        listener.close()
        raise
    if pid == 0:
        try:
            _serve_alone(serve, listener, socket_path, alive_read)
        finally:
            os._exit(0)
    listener.close()
    os.close(alive_read)
    os.set_inheritable(alive_write, True)
    return alive_write


def _serve_alone(serve, listener, socket_path, alive_read):
    """In the relay: nothing of the call's but its listener and life pipe, then serve."""
    keep = sorted((listener.fileno(), alive_read))
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd not in keep:
            os.dup2(null, fd)
    # The call's pipes and the spawn server's error pipe: the worker waits for their ends.
    low = 3
    for fd in keep:
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)
    _libc.prctl(PR_SET_NAME, RELAY_NAME, 0, 0, 0)  # how ps and the tests know it
    # As a Python interpreter starts: a write to a socket closed at its other end is an
    # error for the link at hand (the spawn server keeps SIGPIPE's default, which would
    # end the relay, and every other connection of the call, on the first such write).
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        serve(listener.detach(), socket_path, alive_read)
