from django.apps import AppConfig


class SecretsAppConfig(AppConfig):
    name = "secrets_app"
    verbose_name = "Secrets"
