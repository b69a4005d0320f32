from tools_app.models.audit import AuditEvent

__all__ = ["AuditEvent"]
