"""Reading the process table, file descriptors and memory of the worker."""

from __future__ import annotations

import os
import pwd


def processes_with_marker(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``marker``."""
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{entry.name}/stat", encoding="utf-8") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def processes_with_environ(entry: str) -> list[int]:
    """Live (non-zombie) processes whose environment holds ``entry`` (NAME=value)."""
    wanted = entry.encode()
    found: list[int] = []
    for proc in os.scandir("/proc"):
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{proc.name}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
            with open(f"/proc/{proc.name}/stat", encoding="utf-8") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if wanted in environ and state != "Z":
            found.append(int(proc.name))
    return found


def processes_of_user(name: str) -> list[int]:
    """Live processes owned by the user ``name`` (none when the user is missing)."""
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return []
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/stat", encoding="utf-8") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def open_fd_count() -> int:
    """File descriptors the worker holds open now."""
    return len(os.listdir("/proc/self/fd"))


def rss_high_water_kib() -> int:
    """The worker's peak resident memory (VmHWM) in KiB."""
    with open("/proc/self/status", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("VmHWM missing from /proc/self/status")


def reset_rss_high_water() -> None:
    """Reset VmHWM to the current RSS (writing 5 to clear_refs)."""
    with open("/proc/self/clear_refs", "w", encoding="utf-8") as handle:
        handle.write("5")
