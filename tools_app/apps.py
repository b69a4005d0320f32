import sys
from typing import Any

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured
from django.db.models.signals import post_migrate


def _sync_registry(sender: Any, **kwargs: Any) -> None:
    from tools_app.services.tool_registry import tool_registry_sync

    tool_registry_sync()


def _end_browser_session(sender: Any, *, agent_id: str, **kwargs: Any) -> None:
    from tools_app.builtin.browser.profiles import profile_end

    profile_end(agent_id)


class ToolsAppConfig(AppConfig):
    name = "tools_app"
    verbose_name = "Tools and invocations"

    def ready(self) -> None:
        # After every migrate the registry table matches the tools this code defines.
        post_migrate.connect(_sync_registry, sender=self, dispatch_uid="tools_app.sync_registry")
        # A switched-off agent's browser session ends with its profile.
        from trust_app.signals import agent_switched_off

        agent_switched_off.connect(_end_browser_session, dispatch_uid="tools_app.browser_session")
        # Checked at start, like the config: a broken contract or tool setting stops the
        # process with the reason (the check command reports on it instead).
        if sys.argv[1:2] == ["synthorg_config"]:
            return
        from common.config import ConfigError
        from tools_app.contracts import ContractError
        from tools_app.registry import builtin_catalog

        try:
            builtin_catalog()
        except (ConfigError, ContractError) as exc:
            raise ImproperlyConfigured(str(exc)) from None
