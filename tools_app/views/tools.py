"""The tool registry page: everyone signed in reads it; admins switch tools off and on."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from audit_app.record import Actor
from common.errors import InvalidArgumentError, NotFoundError
from common.page_access import is_org_admin, page_for
from common.roles import Role
from common.settings_config import synthorg_config
from tools_app.bridge.selectors import upstream_servers
from tools_app.builtin.browser.tools import browser_readiness
from tools_app.builtin.desktop.tools import desktop_readiness
from tools_app.selectors.tools import tool_registry_entries
from tools_app.services.tool_registry import tool_enabled_set

REASON_MAX_LENGTH = 500


@page_for()
def tool_index(request: HttpRequest) -> HttpResponse:
    """Category, action type, safety class, backend, definition hash and L1/L2 of every
    tool; the upstream MCP servers with their state (a failed one's stderr for admins)."""
    return render(
        request,
        "tools/list.html",
        {
            "entries": tool_registry_entries(),
            "can_switch": is_org_admin(request),
            "code_execution_backend": synthorg_config().sandboxing.backend_for("code_execution"),
            "desktop_state": desktop_readiness(synthorg_config())[1],
            "browser_state": browser_readiness(synthorg_config())[1],
            "servers": upstream_servers(),
        },
    )


@page_for(Role.ADMIN, organisation_wide=True)
@require_POST
def tool_switch(request: HttpRequest, name: str) -> HttpResponse:
    """Disable or enable a tool for every agent (audited with the admin's reason)."""
    enabled = request.POST.get("enabled") == "1"
    reason = (request.POST.get("reason") or "").strip()[:REASON_MAX_LENGTH]
    try:
        row = tool_enabled_set(
            name=name, enabled=enabled, actor=Actor.person(request.user), reason=reason
        )
    except NotFoundError as exc:
        raise Http404(exc.message) from None
    except InvalidArgumentError as exc:
        messages.error(request, f"{name} was not disabled: {exc.message}.")
        return redirect(f"{reverse('tool-list')}#tool-{name}")
    messages.success(request, f"{row.name} is now {'enabled' if row.enabled else 'disabled'}.")
    return redirect("tool-list")
