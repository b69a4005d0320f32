import sys

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured


class CommonConfig(AppConfig):
    name = "common"
    verbose_name = "Common"

    def ready(self) -> None:
        # Checked at start: a broken policy file stops the process with the file,
        # the field and the allowed values, instead of failing open later. The
        # check command itself must still run to report on it.
        if sys.argv[1:2] == ["synthorg_config"]:
            return
        from common.config import ConfigError
        from common.settings_config import synthorg_config

        try:
            synthorg_config()
        except ConfigError as exc:
            raise ImproperlyConfigured(str(exc)) from None
