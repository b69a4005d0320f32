from django.apps import AppConfig


class ApprovalsAppConfig(AppConfig):
    name = "approvals_app"
    verbose_name = "Approvals"
