from django.apps import AppConfig


class ApprovalsAppConfig(AppConfig):
    name = "approvals_app"
    verbose_name = "Approvals"

    def ready(self) -> None:
        # tools_app reaches people only through the desk it is given here.
        from approvals_app.desk import PeopleDesk
        from tools_app.approval_desk import approval_desk_register

        approval_desk_register(PeopleDesk())
