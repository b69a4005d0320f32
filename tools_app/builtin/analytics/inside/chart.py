"""Runs inside the sandbox: draw one chart with matplotlib, save it as PNG and SVG.

Usage: ``python3 -I -S -c SOURCE`` with the request as JSON on stdin (the series
already checked and bounded by the worker: ``tools_app.builtin.analytics.tables``).
The console's virtual environment is not visible here: matplotlib is Debian's
``python3-matplotlib``, loaded from the system's package directory by name, so a
machine without it answers ``RENDERER_UNAVAILABLE`` naming the package.

matplotlib draws with the Agg backend (no display), TeX and mathtext off (a ``$``
in a label is drawn as it is), its caches in the sandbox's private ``/tmp``. The
files go under ``.synthorg/charts`` in the workspace, a link on the way refused.
The answer is one JSON line: ``{"ok": true, "png": {...}, "svg": {...}}`` or
``{"ok": false, "code": ..., "message": ...}``.
"""

import contextlib
import datetime
import errno
import hashlib
import importlib
import io
import json
import os
import sys
import tempfile
import time

WORKSPACE = "/workspace"
CHART_DIR = ".synthorg/charts"
SYSTEM_PACKAGES = "/usr/lib/python3/dist-packages"
DEBIAN_RC = "/usr/share/matplotlib/mpl-data/matplotlibrc"
DPI = 100


class Failure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def system_module(name, package):
    """A module of a Debian package (``package``), or the failure naming it."""
    if SYSTEM_PACKAGES not in sys.path:
        sys.path.append(SYSTEM_PACKAGES)
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise Failure(
            "RENDERER_UNAVAILABLE",
            f"the sandbox has no {name} ({exc}); install Debian's {package} on the worker's "
            "machine",
        ) from None


def output_dir(relative):
    """``relative`` under the workspace, made here; a link or a file on the way is refused."""
    path = WORKSPACE
    for part in relative.split("/"):
        path = os.path.join(path, part)
        try:
            os.mkdir(path, 0o755)
        except FileExistsError:
            pass
        except OSError as exc:
            raise Failure("WORKSPACE_NOT_WRITABLE", f"cannot make {path}: {exc.strerror}") from None
        if os.path.islink(path) or not os.path.isdir(path):
            raise Failure("PATH_NOT_REACHABLE", f"{path} is not a plain directory")
    return path


def write_whole(fd, path, data):
    """Write ``data`` to the new file ``fd``; a file the workspace quota (the call's file
    size limit) cannot hold is removed, never left cut short."""
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(path)
        if exc.errno in (errno.EFBIG, errno.ENOSPC, errno.EDQUOT):
            raise Failure(
                "LIMIT_EXCEEDED",
                f"the picture ({len(data)} bytes) does not fit in what the workspace quota "
                "(sandboxing.workspace_quota) has left; delete files to make room",
            ) from None
        raise Failure("WORKSPACE_NOT_WRITABLE", f"cannot write {path}: {exc.strerror}") from None


def store(directory, name, data):
    """Write ``data`` as a new file (never through a link); where it is and its digest."""
    path = os.path.join(directory, name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        fd = None  # the same bytes made in the same second: already there
    except OSError as exc:
        raise Failure("WORKSPACE_NOT_WRITABLE", f"cannot write {path}: {exc.strerror}") from None
    if fd is not None:
        write_whole(fd, path, data)
    return {
        "path": os.path.relpath(path, WORKSPACE),
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
    }


def x_values(axis, values):
    if axis == "time":
        utc = datetime.UTC
        return [datetime.datetime.fromtimestamp(v, utc) for v in values]
    return values


def draw(request):
    private = tempfile.mkdtemp(prefix="mpl-")
    os.environ["MPLCONFIGDIR"] = private
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    # matplotlib reads a matplotlibrc from the working directory first: never the
    # workspace's. Debian's looks for its defaults in /etc, which the sandbox hides.
    os.chdir(private)
    if os.path.isfile(DEBIAN_RC):
        os.environ["MATPLOTLIBRC"] = DEBIAN_RC
    matplotlib = system_module("matplotlib", "python3-matplotlib")
    matplotlib.use("Agg")
    matplotlib.rcParams.update(
        {
            "text.usetex": False,
            "text.parse_math": False,
            "svg.fonttype": "path",
            "svg.hashsalt": "synthorg-chart",
        }
    )
    pyplot = importlib.import_module("matplotlib.pyplot")
    figure, axes = pyplot.subplots(
        figsize=(request["width_px"] / DPI, request["height_px"] / DPI), dpi=DPI
    )
    kind, axis, series = request["kind"], request["axis"], request["series"]
    nan = float("nan")
    if axis == "category":
        categories = list(dict.fromkeys(label for s in series for label in s["x"]))
        slot = {label: index for index, label in enumerate(categories)}
    width = 0.8 / max(1, len(series))
    for number, one in enumerate(series):
        ys = [nan if v is None else v for v in one["y"]]
        if axis == "category":
            xs = [slot[label] for label in one["x"]]
            if kind == "bar":
                xs = [x - 0.4 + width * (number + 0.5) for x in xs]  # type: ignore[misc]
        else:
            xs = x_values(axis, one["x"])
        if kind == "line":
            axes.plot(xs, ys, label=one["label"], marker="." if len(ys) < 50 else None)
        elif kind == "scatter":
            axes.scatter(xs, ys, label=one["label"], s=12)
        else:
            axes.bar(xs, ys, width=width if axis == "category" else 0.8, label=one["label"])
    if axis == "category":
        axes.set_xticks(
            range(len(categories)), categories, rotation=45 if len(categories) > 8 else 0
        )
    if axis == "time":
        figure.autofmt_xdate()
    axes.set_title(request["title"])
    axes.set_xlabel(request["x_label"])
    axes.set_ylabel(request["y_label"])
    if len(series) > 1:
        axes.legend(fontsize="small")
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    png, svg = io.BytesIO(), io.BytesIO()
    figure.savefig(png, format="png", dpi=DPI, metadata={"Software": None})
    figure.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    pyplot.close(figure)
    return png.getvalue(), svg.getvalue()


def main():
    try:
        request = json.loads(sys.stdin.buffer.read())
        png, svg = draw(request)
        directory = output_dir(CHART_DIR)
        stem = (
            time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            + "-"
            + hashlib.sha256(png).hexdigest()[:12]
        )
        answer = {
            "ok": True,
            "png": store(directory, stem + ".png", png),
            "svg": store(directory, stem + ".svg", svg),
        }
    except Failure as exc:
        answer = {"ok": False, "code": exc.code, "message": exc.message}
    except MemoryError:
        answer = {
            "ok": False,
            "code": "MEMORY_LIMIT",
            "message": "the chart needed more memory than it may use",
        }
    sys.stdout.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
