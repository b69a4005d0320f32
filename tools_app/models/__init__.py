from tools_app.models.bridge import UpstreamToolPin
from tools_app.models.bridge_records import UpstreamToolRecord
from tools_app.models.desktop import DesktopTakeover
from tools_app.models.disclosure import ToolDisclosureState
from tools_app.models.invocation import TERMINAL_STATUSES, Invocation, InvocationStatus
from tools_app.models.memory import AgentMemory
from tools_app.models.registry import ToolDefinition

__all__ = [
    "TERMINAL_STATUSES",
    "AgentMemory",
    "DesktopTakeover",
    "Invocation",
    "InvocationStatus",
    "ToolDefinition",
    "ToolDisclosureState",
    "UpstreamToolPin",
    "UpstreamToolRecord",
]
