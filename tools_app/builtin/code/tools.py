"""``code_runner``: run a Python or shell snippet, only on an isolating backend.

Code is arbitrary by nature, so no list can vet it; the isolation is the
control. The tool runs only when ``context.sandbox`` is the namespace or
docker backend (own namespaces, no network, hidden host files). On the
subprocess backend, or any other, it fails closed before anything runs: never
a silent fallback to a weaker sandbox.

Settings (``tools.code_runner``): ``timeout_seconds`` (30),
``max_timeout_seconds`` (300), ``max_output_bytes`` per stream (65536),
``max_code_bytes`` (65536; the snippet travels in argv, whose words the kernel
caps at 128 KiB), ``read_only`` (mount the workspace read-only),
``max_link_scan_entries`` (200 000: workspace entries checked for files with
several hard links before a run; see ``fs_links``).
Sub-constraints: ``code_execution`` ``none`` refuses; ``containerized`` needs
the docker backend; anything else accepts namespace or docker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.file_system.links import refuse_hard_links
from tools_app.builtin.process_output import PROCESS_OUTPUT_SCHEMA
from tools_app.builtin.sandbox_network import sandbox_network
from tools_app.builtin.secret_env import SECRET_ENV_PROPERTY, secret_env
from tools_app.builtin.terminal.settings import DEFAULT_MAX_LINK_SCAN_ENTRIES
from tools_app.builtin.terminal.tools import outcome_from_result
from tools_app.contracts import ToolContract
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import (
    Limits,
    MountMode,
    SandboxSpec,
    WorkspaceMount,
)

ISOLATING_BACKENDS: Final = frozenset({"namespace", "docker"})
# Hard ceiling whatever the settings say: one argv word may not exceed 128 KiB.
ARGV_WORD_CEILING: Final = 128 * 1024 - 1
LANGUAGES: Final = {
    "python": ("python3", "-I", "-c"),
    "shell": ("sh", "-c"),
}

CODE_RUNNER_CONTRACT: Final = ToolContract(
    name="code_runner",
    category=ToolCategory.CODE_EXECUTION,
    # The code-execution category's action type: running code, as tests do.
    action_type="test:run",
    safety_class=SafetyClass.WRITE,
    idempotency="required",
    cost_tier="medium",
    summary="Run a Python or shell snippet in an isolated sandbox without network.",
    description=(
        "Runs `code` with python3 (isolated mode) or sh, in the workspace, inside new "
        "namespaces or a container with no network and a timeout. Refused when the "
        "configured sandbox for code execution does not isolate (plain subprocess). "
        "Returns exit code, stdout and stderr; output is cut per stream at the limit."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "language": {"type": "string", "enum": sorted(LANGUAGES)},
            "code": {"type": "string", "minLength": 1, "maxLength": ARGV_WORD_CEILING},
            "stdin": {"type": "string", "maxLength": 1048576},
            "timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
            "secret_env": SECRET_ENV_PROPERTY,
        },
        "required": ["language", "code"],
        "additionalProperties": False,
    },
    output_schema=dict(PROCESS_OUTPUT_SCHEMA),
    failure_modes=(
        "SANDBOX_NOT_ISOLATED: the code-execution sandbox here is not namespace or docker.",
        "INVALID_ARGUMENT: unknown language, or code with a NUL byte.",
        "LIMIT_EXCEEDED: the code is too long, or the timeout asked for is over the maximum.",
    ),
)


def _setting(settings: Mapping[str, Any], key: str, default: float) -> float:
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ToolFailedError(
            f"code_runner setting {key!r} has the unusable value {value!r}",
            code="CONFIG_INVALID",
        )
    return float(value)


def require_isolation(context: ToolContext) -> None:
    """Fail closed unless the sandbox isolates as much as code execution needs."""
    backend = str(getattr(context.sandbox, "name", ""))
    mode = context.sub_constraints.get("code_execution", "namespace")
    mode = str(getattr(mode, "value", mode))
    if mode == "none":
        raise ToolFailedError(
            "code execution is not permitted for this agent (code_execution: none)",
            code="CODE_EXECUTION_DENIED",
        )
    if backend not in ISOLATING_BACKENDS or not getattr(context.sandbox, "isolates_network", False):
        raise ToolFailedError(
            f"code_runner runs only on the namespace or docker sandbox, and code execution "
            f"here is configured to use {backend or 'an unknown backend'!r}; nothing was run. "
            "Ask an admin to set sandboxing.overrides.code_execution to namespace or docker",
            code="SANDBOX_NOT_ISOLATED",
        )
    if mode == "containerized" and backend != "docker":
        raise ToolFailedError(
            f"this agent's code must run in a container, but the sandbox is {backend!r}; "
            "nothing was run",
            code="SANDBOX_NOT_ISOLATED",
        )


class CodeRunnerTool:
    """``code_runner``: a snippet of Python or shell, in an isolating sandbox only."""

    contract: ToolContract = CODE_RUNNER_CONTRACT

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the backend first, then run the snippet with the configured limits."""
        require_isolation(context)
        settings = context.settings
        language = arguments.get("language")
        if language not in LANGUAGES:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT,
                f"language must be one of {', '.join(sorted(LANGUAGES))}",
            )
        code = arguments.get("code")
        if not isinstance(code, str) or not code.strip():
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "code must be a non-empty string")
        if "\x00" in code:
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "code contains a NUL byte")
        limit = min(int(_setting(settings, "max_code_bytes", 64 * 1024)), ARGV_WORD_CEILING)
        size = len(code.encode("utf-8", "surrogatepass"))
        if size > limit:
            raise ToolRefusedError(
                RefusalCode.LIMIT_EXCEEDED, f"code is {size} bytes; the limit is {limit}"
            )
        timeout = _setting(settings, "timeout_seconds", 30.0)
        requested = arguments.get("timeout_seconds")
        if requested is not None:
            ceiling = _setting(settings, "max_timeout_seconds", 300.0)
            if isinstance(requested, bool) or not isinstance(requested, int | float):
                raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "timeout must be a number")
            if not 0 < requested <= ceiling:
                raise ToolRefusedError(
                    RefusalCode.LIMIT_EXCEEDED,
                    f"timeout_seconds must be above 0 and at most {ceiling:g}",
                )
            timeout = float(requested)
        stdin = arguments.get("stdin", "")
        if not isinstance(stdin, str):
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "stdin must be a string")
        read_only = settings.get("read_only", False)
        if not isinstance(read_only, bool):
            raise ToolFailedError("code_runner setting 'read_only' must be true or false")
        output_bytes = int(_setting(settings, "max_output_bytes", 64 * 1024))
        refuse_hard_links(
            context.workspace,
            max_entries=int(
                _setting(settings, "max_link_scan_entries", DEFAULT_MAX_LINK_SCAN_ENTRIES)
            ),
        )
        variables = secret_env(arguments)
        with sandbox_network(context) as network:
            spec = SandboxSpec(
                argv=(*LANGUAGES[language], code),
                workspace=WorkspaceMount(
                    context.workspace, MountMode.READ_ONLY if read_only else MountMode.READ_WRITE
                ),
                stdin=stdin.encode("utf-8"),
                timeout_seconds=timeout,
                limits=Limits(output_bytes=output_bytes),
                owner=context.owner,
                secret_env=variables,
                **network,
            )
            try:
                result = context.sandbox.run(spec)
            except SandboxError as exc:
                raise ToolFailedError(exc.reason, code="SANDBOX_REFUSED") from exc
        return outcome_from_result(result, timeout, output_bytes)


code_runner: Final = CodeRunnerTool()

TOOLS: Final = (code_runner,)
