from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def default_team_ensure(**kwargs: Any) -> None:
    """The default team exists after every migrate and flush: agents join it unless told."""
    from trust_app.models import DEFAULT_TEAM_ID, DEFAULT_TEAM_NAME, Team

    using = kwargs.get("using", "default")
    Team.objects.using(using).get_or_create(
        id=DEFAULT_TEAM_ID, defaults={"name": DEFAULT_TEAM_NAME}
    )


class TrustAppConfig(AppConfig):
    name = "trust_app"
    verbose_name = "Agents and trust"

    def ready(self) -> None:
        post_migrate.connect(default_team_ensure, sender=self)
