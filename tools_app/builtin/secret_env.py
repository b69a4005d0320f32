"""The ``secret_env`` argument of shell_command and code_runner: sealed secrets.

The agent names environment variables and the secrets they stand for
(``{"DEPLOY_TOKEN": "${secret:DEPLOY_TOKEN}"}``). The program never holds a value:
its variable holds the reference itself, a placeholder worthless anywhere else, and
the console's egress proxy adds the value to the program's HTTP(S) requests to the
hosts the secret's grant names (as the grant says: a bearer token, basic auth, a
header or a query parameter), and to no other request. The worker checks the grant
(``secrets_app.substitution``) and hands the values to the proxy only.
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
        "Secrets granted to you for this tool, by environment variable: "
        '{"VARIABLE": "${secret:NAME}"}. Your program sees the reference itself as the '
        "variable's value; the console adds the real value to your program's HTTP(S) "
        "requests to the hosts the secret is granted for (use the variable where the "
        "credential goes, e.g. an Authorization header). Your program never holds it."
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
