"""The docker backend's own probe: reach the engine, find the image, run ``true``."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from tools_app.egress.probe import probe_egress
from tools_app.sandbox.backends.docker.engine import sdk_errors
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.linux.userns import NESTED_USERNS_PROBE, nested_userns_verdict
from tools_app.sandbox.protocol import Limits, ProbeReport, SandboxSpec, WorkspaceMount

if TYPE_CHECKING:
    from tools_app.sandbox.backends.docker.backend import DockerSandbox


def _nested_verdict(stdout: str) -> str:
    # Docker's default seccomp profile is what refuses unshare/setns to a container
    # without CAP_SYS_ADMIN; say whether a filter is really on (mode 2).
    lines = stdout.splitlines()
    seccomp = next((line.split()[-1] for line in lines if line.startswith("Seccomp:")), "?")
    verdict = nested_userns_verdict("\n".join(x for x in lines if not x.startswith("Seccomp:")))
    mode = "on" if seccomp == "2" else f"OFF (mode {seccomp})"
    return f"{verdict[1]} (seccomp filter {mode})"


def probe_docker(backend: DockerSandbox) -> ProbeReport:
    """Reach the engine, check the image, and run ``true`` in a fresh container."""
    errors = sdk_errors()
    details: dict[str, object] = {
        "engine": backend.engine_address,
        "image": backend.settings.image,
        "lifecycle": str(backend.settings.strategy),
    }
    try:
        lifecycle = backend.lifecycle()
    except SandboxError as exc:
        return ProbeReport(backend.name, False, exc.reason, details)
    try:
        lifecycle.client.images.get(backend.settings.image)
    except errors.ImageNotFound:
        return ProbeReport(
            backend.name,
            False,
            f"image {backend.settings.image} is missing; build it with "
            "`manage.py synthorg_sandbox build-image`",
            details,
        )
    except errors.DockerException as exc:
        return ProbeReport(backend.name, False, f"engine error: {exc}", details)
    with tempfile.TemporaryDirectory(prefix="synthorg-probe-") as tmp:
        Path(tmp).chmod(0o755)  # the image's user must enter it
        spec = SandboxSpec(argv=("true",), workspace=WorkspaceMount(Path(tmp)), limits=Limits())
        nested = SandboxSpec(
            argv=("sh", "-c", f"{NESTED_USERNS_PROBE}; grep '^Seccomp:' /proc/self/status"),
            workspace=WorkspaceMount(Path(tmp)),
            limits=Limits(),
        )
        try:
            result = backend.run(spec)
            if result.exit_code == 0:
                details["nested_user_namespaces"] = _nested_verdict(backend.run(nested).stdout)
                details["egress_proxy"] = probe_egress(backend)[1]
        except (SandboxError, errors.DockerException) as exc:
            reason = exc.reason if isinstance(exc, SandboxError) else str(exc)
            return ProbeReport(backend.name, False, reason, details)
        finally:
            backend.close()
    if result.exit_code != 0:
        return ProbeReport(
            backend.name, False, f"`true` exited {result.exit_code}: {result.stderr[:300]}", details
        )
    return ProbeReport(
        backend.name,
        True,
        f"ran `true` as an exec in a locked-down container; {details['egress_proxy']}",
        details,
    )
