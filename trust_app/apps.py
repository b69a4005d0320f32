from django.apps import AppConfig


class TrustAppConfig(AppConfig):
    name = "trust_app"
    verbose_name = "Agents and trust"
