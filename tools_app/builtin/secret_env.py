"""The ``secret_env`` argument of shell_command and code_runner.

The agent names environment variables and the secrets that fill them
(``{"DEPLOY_TOKEN": "${secret:DEPLOY_TOKEN}"}``); the worker substitutes the
granted values (secrets_app) before the tool runs, and the sandbox puts them in
the process's environment only. A program the agent writes then holds the
value: echoes are redacted from the result in every encoding the sanitiser
knows, but a deliberate transformation is not, so grant such a secret only where
the egress allowlist bounds where it could be sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from tools_app.builtin.base import RefusalCode, ToolRefusedError
from tools_app.sandbox.env import is_refused_for_a_secret

_VARIABLE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
MAX_SECRET_VARIABLES: Final = 16

SECRET_ENV_PROPERTY: Final = {
    "type": "object",
    "description": (
        "Environment variables filled with named secrets granted to you for this tool: "
        '{"VARIABLE": "${secret:NAME}"}. The value is put in the process\'s environment '
        "only, never in the arguments or the result."
    ),
    "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$"},
    "additionalProperties": {
        "type": "string",
        "pattern": "^\\$\\{secret:[A-Za-z_][A-Za-z0-9_.-]{0,99}\\}$",
    },
    "maxProperties": MAX_SECRET_VARIABLES,
}


def secret_env(arguments: Mapping[str, Any]) -> dict[str, str]:
    """The call's secret variables (values already substituted by the worker)."""
    given = arguments.get("secret_env") or {}
    if not isinstance(given, Mapping):
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "secret_env must be an object")
    checked: dict[str, str] = {}
    for name, value in given.items():
        if not isinstance(name, str) or not _VARIABLE.fullmatch(name):
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT,
                "secret_env names are letters, digits and '_' (at most 64), not starting "
                "with a digit",
            )
        if is_refused_for_a_secret(name):
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT,
                f"secret_env cannot set {name}: loader, interpreter, proxy and the "
                "sandbox's own variables are refused; choose another name",
            )
        if not isinstance(value, str):
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "secret_env values are strings")
        checked[name] = value
    return checked
