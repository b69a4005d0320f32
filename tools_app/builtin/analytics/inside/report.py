"""Runs inside the sandbox: render one report template with Jinja2's sandboxed environment.

Usage: ``python3 -I -S -c SOURCE`` with the request as JSON on stdin:
``{"template", "data", "format": "markdown"|"html", "max_output_bytes", "stem"}``.
Jinja2 is Debian's ``python3-jinja2``, loaded from the system's package directory.

Walls, in order: ``SandboxedEnvironment`` (no attribute starting with ``_``, no
unsafe callables, ``str.format`` checked, ``range`` capped) with no loader (no
``include``, ``import`` or ``extends``), autoescape for HTML; ``*`` and ``**``
refused when their result would be huge; the output cut at ``max_output_bytes``
while it is generated; and the sandbox's own time, memory and process limits
around all of it. The report goes under ``.synthorg/reports`` in the workspace.
"""

import hashlib
import importlib
import json
import os
import sys
import time

WORKSPACE = "/workspace"
REPORT_DIR = ".synthorg/reports"
SYSTEM_PACKAGES = "/usr/lib/python3/dist-packages"
MAX_EXPONENT = 1024


class Failure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def system_module(name, package):
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


def bounded_environment(sandbox, limit, html):
    """A sandboxed environment whose ``*`` and ``**`` cannot make huge values."""

    base = sandbox.SandboxedEnvironment

    class Bounded(base):  # type: ignore[valid-type,misc]
        intercepted_binops = frozenset(["*", "**"])

        def call_binop(self, context, operator, left, right):
            if operator == "**" and isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
                raise sandbox.SecurityError(f"an exponent above {MAX_EXPONENT} is not allowed")
            if operator == "*":
                for seq, times in ((left, right), (right, left)):
                    sized = isinstance(seq, (str, list, tuple)) and isinstance(times, int)
                    if sized and len(seq) * times > limit:
                        raise sandbox.SecurityError(
                            "repeating a value that many times would pass the output limit"
                        )
            return super().call_binop(context, operator, left, right)

    jinja2 = system_module("jinja2", "python3-jinja2")
    return Bounded(autoescape=html, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def render(request):
    jinja2 = system_module("jinja2", "python3-jinja2")
    sandbox = importlib.import_module("jinja2.sandbox")
    limit = int(request["max_output_bytes"])
    environment = bounded_environment(sandbox, limit, request["format"] == "html")
    data = request["data"]
    names = dict(data) if isinstance(data, dict) else {}
    names["data"] = data
    try:
        template = environment.from_string(request["template"])
    except jinja2.TemplateSyntaxError as exc:
        raise Failure("TEMPLATE_INVALID", f"line {exc.lineno}: {exc.message}") from None
    size, parts = 0, []
    try:
        for chunk in template.generate(**names):
            encoded = chunk.encode("utf-8", "surrogatepass")
            size += len(encoded)
            if size > limit:
                raise Failure(
                    "LIMIT_EXCEEDED",
                    f"the report grew past {limit} bytes (analytics.reports.max_output_bytes); "
                    "nothing was written",
                )
            parts.append(encoded)
    except sandbox.SecurityError as exc:
        raise Failure("TEMPLATE_UNSAFE", f"the template is not allowed to do that: {exc}") from None
    except jinja2.TemplateError as exc:
        raise Failure("TEMPLATE_FAILED", f"the template failed: {exc}") from None
    except (TypeError, ValueError, ArithmeticError, LookupError) as exc:
        raise Failure(
            "TEMPLATE_FAILED", f"the template failed: {exc.__class__.__name__}: {exc}"
        ) from None
    return b"".join(parts)


def report_dir():
    path = WORKSPACE
    for part in REPORT_DIR.split("/"):
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


def store(body, request):
    digest = hashlib.sha256(body).hexdigest()
    stem = request.get("stem") or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    name = f"{stem}-{digest[:12]}.{'html' if request['format'] == 'html' else 'md'}"
    path = os.path.join(report_dir(), name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        fd = None  # the same report made in the same second: already there
    except OSError as exc:
        raise Failure("WORKSPACE_NOT_WRITABLE", f"cannot write {path}: {exc.strerror}") from None
    if fd is not None:
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
    return {"path": os.path.relpath(path, WORKSPACE), "sha256": digest, "bytes": len(body)}


def main():
    try:
        request = json.loads(sys.stdin.buffer.read())
        body = render(request)
        answer = {"ok": True, "report": store(body, request)}
    except Failure as exc:
        answer = {"ok": False, "code": exc.code, "message": exc.message}
    except (MemoryError, RecursionError):
        answer = {
            "ok": False,
            "code": "LIMIT_EXCEEDED",
            "message": "the template needed more memory or depth than it may use",
        }
    sys.stdout.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
