"""``{% sign_in_options as options %}``: what the sign-in page offers (single sign-on's
button, and whether passwords are for everyone or only break-glass accounts)."""

from __future__ import annotations

from typing import Any

from django import template

from common.settings_config import synthorg_config

register = template.Library()


@register.simple_tag
def sign_in_options() -> dict[str, Any]:
    people = synthorg_config().people
    return {
        "sso_label": people.oidc.label if people.oidc is not None else "",
        "local_accounts": people.local_accounts,
    }
