"""``shell_command``: run one program (argv), or a checked command line, in the terminal sandbox.

The program and every program it would run are checked against the allow and
deny lists before any process starts (``shell_policy``); command lines, when
the settings accept them, are parsed, every command in them checked, and then
written back fully quoted so the shell runs exactly what was checked
(``shell_parse``), git going through the console's git launcher and sed
given ``--sandbox`` (``terminal_harden``). The call runs on the terminal
category's backend (namespace by default) with a clean environment, no
network, the working directory inside the workspace, a timeout and output cut
per stream. Settings and
sub-constraint keys: see ``terminal_settings``.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from typing import Any, Final

from common.vocabulary.categories import SafetyClass, ToolCategory
from common.vocabulary.programs import code_runner_hint
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.file_system.links import refuse_hard_links
from tools_app.builtin.file_system.paths import (
    AgentPath,
    PathRules,
    check_agent_path,
    workspace_roots,
)
from tools_app.builtin.git.command import LAUNCHER_ARGV, default_identity, launcher_refusal
from tools_app.builtin.process_output import PROCESS_OUTPUT_SCHEMA
from tools_app.builtin.sandbox_network import sandbox_network
from tools_app.builtin.secret_env import SECRET_ENV_PROPERTY, secret_env
from tools_app.builtin.terminal.harden import Hardening, harden_argv, harden_command_list
from tools_app.builtin.terminal.settings import TerminalSettings, program_rules
from tools_app.builtin.terminal.shell.parse import (
    ShellSyntaxRefusedError,
    parse_command_line,
    render,
    simple_commands,
)
from tools_app.builtin.terminal.shell.policy import (
    CommandRefusedError,
    ProgramRules,
    check_argv,
    check_command_line,
)
from tools_app.contracts import ToolContract
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import (
    KilledBy,
    Limits,
    MountMode,
    SandboxResult,
    SandboxSpec,
    WorkspaceMount,
)
from trust_app.policy.tool_view import ArgumentRole

SHELL: Final = "sh"
_DEVICE_TARGETS: Final = frozenset({"/dev/null"})

SHELL_COMMAND_CONTRACT: Final = ToolContract(
    name="shell_command",
    category=ToolCategory.TERMINAL,
    # What a command does is open-ended; the category's most consequential type.
    action_type="code:write",
    safety_class=SafetyClass.WRITE,
    idempotency="required",
    summary="Run an allowed program with arguments in the workspace sandbox.",
    description=(
        "Runs `argv` (a program and its arguments, no shell) in the workspace, without "
        "network, with a timeout. The program, and any program it would start through "
        "env, xargs, timeout, find -exec or sh -c, must pass the allow and deny lists; "
        "names are compared as tool families, so a deny on python3 covers python3.11. "
        "When enabled, `command` takes a command line with pipes, &&, ||, ; and "
        "parentheses; variables, command substitution and control structures are refused."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "argv": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": 1024,
            },
            "command": {"type": "string", "minLength": 1, "maxLength": 65536},
            "cwd": {"type": "string", "minLength": 1, "maxLength": 4096, "default": "."},
            "stdin": {"type": "string", "maxLength": 1048576},
            "timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
            "secret_env": SECRET_ENV_PROPERTY,
        },
        "oneOf": [{"required": ["argv"]}, {"required": ["command"]}],
        "additionalProperties": False,
    },
    output_schema=dict(PROCESS_OUTPUT_SCHEMA),
    failure_modes=(
        "BINARY_NOT_ALLOWED: the program, or one it would run, is denied or not allowed.",
        "INVALID_ARGUMENT: the command line uses refused syntax, or command strings are off.",
        "PATH_NOT_REACHABLE: cwd or a redirection target is outside the workspace.",
        "LIMIT_EXCEEDED: the timeout asked for is over the maximum.",
    ),
    argument_roles={
        "argv": ArgumentRole.COMMAND,
        "command": ArgumentRole.COMMAND,
        "cwd": ArgumentRole.PATH,
    },
)


COMMAND_MODE_OFF: Final = (
    "command strings are switched off here; pass argv (a list: program, arguments)"
)


def _refused(exc: CommandRefusedError) -> ToolRefusedError:
    """BINARY_NOT_ALLOWED; for an interpreter code_runner offers, naming that tool."""
    hint = next((h for f in sorted(exc.families) if (h := code_runner_hint(f))), None)
    if hint is None:
        return ToolRefusedError(RefusalCode.BINARY_NOT_ALLOWED, exc.reason)
    return ToolRefusedError(RefusalCode.BINARY_NOT_ALLOWED, f"{exc.reason}. {hint}")


def _workspace_path(context: ToolContext, raw: object) -> AgentPath:
    rules = PathRules(workspace_roots=workspace_roots(context.workspace))
    return check_agent_path(raw, rules)


def _check_argv_words(argv: object, limit: int) -> list[str]:
    if not isinstance(argv, list | tuple) or not argv:
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "argv must be a non-empty list")
    if not all(isinstance(w, str) for w in argv) or not argv[0]:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, "argv must hold strings, the first one naming a program"
        )
    if any("\x00" in w for w in argv):
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "argv words must not contain NUL")
    if sum(len(w.encode("utf-8", "surrogatepass")) + 1 for w in argv) > limit:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED, f"the arguments are longer than {limit} bytes"
        )
    return list(argv)


def _check_redirections(context: ToolContext, cwd: AgentPath, line: str) -> None:
    for command in simple_commands(parse_command_line(line)):
        for redirection in command.redirections:
            target = redirection.target.text
            if redirection.op.endswith("&") or target in _DEVICE_TARGETS:
                continue
            joined = target if target.startswith("/") else posixpath.join(cwd.display(), target)
            _workspace_path(context, joined)


def _command_line(
    context: ToolContext,
    settings: TerminalSettings,
    rules: ProgramRules,
    cwd: AgentPath,
    cwd_host: str,
    line: object,
    hardening: Hardening,
) -> tuple[str, ...]:
    if not settings.command_mode:
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, COMMAND_MODE_OFF)
    if not isinstance(line, str) or not line.strip():
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "command must be a non-empty string")
    if len(line.encode("utf-8", "surrogatepass")) > settings.max_command_length:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"the command is longer than {settings.max_command_length} bytes",
        )
    try:
        parsed = parse_command_line(line)
    except ShellSyntaxRefusedError as exc:
        # Syntax that could run something unchecked is a program refusal; typos are not.
        code = RefusalCode.BINARY_NOT_ALLOWED if exc.hides_program else RefusalCode.INVALID_ARGUMENT
        raise ToolRefusedError(code, f"command line refused: {exc}") from exc
    try:
        check_command_line(line, rules, cwd_host)
    except CommandRefusedError as exc:
        raise _refused(exc) from exc
    _check_redirections(context, cwd, line)
    return (SHELL, "-c", render(harden_command_list(parsed, hardening)))


def _timeout(settings: TerminalSettings, requested: object) -> float:
    if requested is None:
        return settings.timeout_seconds
    if isinstance(requested, bool) or not isinstance(requested, int | float) or requested <= 0:
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "timeout_seconds must be positive")
    if requested > settings.max_timeout_seconds:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"timeout_seconds {requested:g} is over the maximum of "
            f"{settings.max_timeout_seconds:g}",
        )
    return float(requested)


def outcome_from_result(result: SandboxResult, timeout: float, limit: int) -> ToolOutcome:
    """Turn a sandbox result into what the agent sees: both streams, exit code, cut marks."""
    notes: list[str] = []
    if result.timed_out:
        notes.append(f"[stopped: no exit within {timeout:g} s]")
    if result.killed_by is KilledBy.OUTPUT_LIMIT or result.truncated:
        notes.append(f"[output cut at {limit} bytes per stream; the command was stopped]")
    elif result.killed_by is not None:
        notes.append(f"[stopped by the sandbox: {result.killed_by.value}]")
    content = result.stdout
    if result.stderr:
        content += ("\n" if content and not content.endswith("\n") else "") + "[stderr]\n"
        content += result.stderr
    if notes:
        content += ("\n" if content and not content.endswith("\n") else "") + "\n".join(notes)
    failed = result.timed_out or (
        result.exit_code != 0 and result.killed_by is not KilledBy.OUTPUT_LIMIT
    )
    error_code = "TIMED_OUT" if result.timed_out else ("NON_ZERO_EXIT" if failed else None)
    structured = {
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "stdout_truncated": result.stdout_truncated,
        "stderr_truncated": result.stderr_truncated,
        "timed_out": result.timed_out,
    }
    return ToolOutcome(
        content=content,
        structured=structured,
        is_error=failed,
        error_code=error_code,
        exit_code=result.exit_code,
        truncated=result.truncated or result.killed_by is KilledBy.OUTPUT_LIMIT,
        duration_ms=result.duration_ms,
        # Stopped at its time limit: the call ends `timed_out`, what it printed kept.
        timed_out=result.timed_out,
    )


class ShellCommandTool:
    """``shell_command``: one checked program or command line in the terminal sandbox."""

    contract: ToolContract = SHELL_COMMAND_CONTRACT

    def preflight(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        """Refuse, before anyone is asked, what the settings refuse whatever the call
        would run: unreadable settings, both or neither of argv and command, and a
        command string where command strings are switched off."""
        terminal = TerminalSettings.from_mapping(settings)
        if ("argv" in arguments) == ("command" in arguments):
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, "pass exactly one of argv or command"
            )
        if "command" in arguments and not terminal.command_mode:
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, COMMAND_MODE_OFF)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check everything that would run, then run it in ``context.sandbox``."""
        settings = TerminalSettings.from_mapping(context.settings)
        rules = program_rules(settings, context.sub_constraints)
        has_argv, has_command = "argv" in arguments, "command" in arguments
        if has_argv == has_command:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, "pass exactly one of argv or command"
            )
        cwd = _workspace_path(context, arguments.get("cwd", "."))
        cwd_host = os.path.join(os.path.realpath(context.workspace), *cwd.parts)
        hardening = Hardening(
            rules, cwd_host, len(cwd.parts), not settings.read_only, default_identity(context)
        )
        if has_argv:
            argv = _check_argv_words(arguments["argv"], settings.max_command_length)
            try:
                check_argv(argv, rules, cwd_host)
            except CommandRefusedError as exc:
                raise _refused(exc) from exc
            run_argv = harden_argv(argv, hardening)
        else:
            run_argv = _command_line(
                context, settings, rules, cwd, cwd_host, arguments["command"], hardening
            )
        refuse_hard_links(context.workspace, max_entries=settings.max_link_scan_entries)
        stdin = arguments.get("stdin", "")
        if not isinstance(stdin, str):
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "stdin must be a string")
        timeout = _timeout(settings, arguments.get("timeout_seconds"))
        variables = secret_env(arguments)
        with sandbox_network(context) as network:
            spec = SandboxSpec(
                argv=run_argv,
                workspace=WorkspaceMount(
                    context.workspace,
                    MountMode.READ_ONLY if settings.read_only else MountMode.READ_WRITE,
                ),
                cwd=cwd.display(),
                env={"PATH": ":".join(settings.search_path)},
                stdin=stdin.encode("utf-8"),
                timeout_seconds=timeout,
                limits=Limits(output_bytes=settings.max_output_bytes),
                owner=context.owner,
                secret_env=variables,
                **network,
            )
            try:
                result = context.sandbox.run(spec)
            except SandboxError as exc:
                raise ToolFailedError(exc.reason, code="SANDBOX_REFUSED") from exc
        refusal = launcher_refusal(result) if run_argv[:5] == LAUNCHER_ARGV else None
        if refusal is not None:
            raise refusal
        return outcome_from_result(result, timeout, settings.max_output_bytes)


shell_command: Final = ShellCommandTool()

TOOLS: Final = (shell_command,)
