from tools_app.models.audit import AuditEvent
from tools_app.models.invocation import TERMINAL_STATUSES, Invocation, InvocationStatus
from tools_app.models.registry import ToolDefinition

__all__ = ["TERMINAL_STATUSES", "AuditEvent", "Invocation", "InvocationStatus", "ToolDefinition"]
