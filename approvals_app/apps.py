from django.apps import AppConfig


class ApprovalsAppConfig(AppConfig):
    name = "approvals_app"
    verbose_name = "Approvals"

    def ready(self) -> None:
        # tools_app reaches people only through the desk it is given here.
        from approvals_app.desk import PeopleDesk
        from tools_app.approval_desk import approval_desk_register

        approval_desk_register(PeopleDesk())
        # Pending requests are decided again whenever what they depend on changes.
        from approvals_app.services.redecide import on_policy_change
        from trust_app.policy_changes import policy_change_listen

        policy_change_listen(on_policy_change)
        # Messages about a request state its effect as its card does.
        from approvals_app.selectors.notice import notice_effect
        from notifications_app.services import notifications_effect_register

        notifications_effect_register(notice_effect)
