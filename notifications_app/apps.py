from django.apps import AppConfig


class NotificationsAppConfig(AppConfig):
    name = "notifications_app"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Notifications"
