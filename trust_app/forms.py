"""Forms of the agent pages. They parse what a person typed; the services decide what is valid."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from django import forms
from django.conf import settings

from common.errors import InvalidArgumentError
from common.settings_config import synthorg_config
from trust_app.concurrency import MAX_CONCURRENT_CALLS_MAX, MAX_CONCURRENT_CALLS_MIN
from trust_app.models import Autonomy
from trust_app.services.permissions import AgentPermissionsState, agent_permissions_check
from trust_app.tokens.life import DEFAULT_SCOPES, SCOPE_VALUES

_SEPARATORS = re.compile(r"[\s,]+")


def tool_list(text: str) -> list[str]:
    """Tool names separated by commas, spaces or new lines."""
    return [name for name in _SEPARATORS.split(text or "") if name]


class AgentPermissionsForm(forms.Form):
    # Free text behind a select: a value outside the list reaches the service check,
    # which answers with the allowed values.
    access_level = forms.CharField(widget=forms.Select)
    autonomy = forms.CharField(widget=forms.Select(choices=Autonomy.choices))
    allowed = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Tool names, one per line: usable whatever the level says (denied wins).",
    )
    denied = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Tool names, one per line: never usable.",
    )
    sub_constraints = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        help_text="YAML or JSON mapping of the level's sub-constraints to change, "
        "e.g. network: allowlist_only / allowed_hosts: [api.example.com:443].",
    )
    # No bounds here: the service refuses a value out of them with the allowed values.
    max_concurrent_calls = forms.IntegerField(
        required=False,
        label="Calls at once",
        widget=forms.NumberInput(
            attrs={"min": MAX_CONCURRENT_CALLS_MIN, "max": MAX_CONCURRENT_CALLS_MAX}
        ),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        levels = synthorg_config().access_levels()
        self.fields["access_level"].widget.choices = [(name, name) for name in levels]
        default = settings.SYNTHORG_AGENT_MAX_CONCURRENT_CALLS
        cap = self.fields["max_concurrent_calls"]
        cap.help_text = (
            f"How many of this agent's calls run at once; blank: the console default "
            f"({default}). Calls beyond wait their turn, queued."
        )
        cap.widget.attrs["placeholder"] = f"default ({default})"
        self.state: AgentPermissionsState | None = None

    @classmethod
    def for_state(cls, state: AgentPermissionsState) -> AgentPermissionsForm:
        return cls(
            initial={
                "access_level": state.access_level,
                "autonomy": state.autonomy,
                "allowed": "\n".join(state.allowed),
                "denied": "\n".join(state.denied),
                "sub_constraints": (
                    yaml.safe_dump(dict(state.sub_constraints), sort_keys=True)
                    if state.sub_constraints
                    else ""
                ),
                "max_concurrent_calls": state.max_concurrent_calls,
            }
        )

    def clean_sub_constraints(self) -> dict[str, Any]:
        text = self.cleaned_data.get("sub_constraints") or ""
        if not text.strip():
            return {}
        try:
            parsed = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise forms.ValidationError(f"not YAML or JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise forms.ValidationError("must be a mapping of field: value")
        return parsed

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            self.state = agent_permissions_check(
                access_level=data["access_level"],
                autonomy=data["autonomy"],
                allowed=tool_list(data.get("allowed", "")),
                denied=tool_list(data.get("denied", "")),
                sub_constraints=data.get("sub_constraints") or {},
                max_concurrent_calls=data.get("max_concurrent_calls"),
            )
        except InvalidArgumentError as exc:
            for key, message in exc.details.get("problems", {}).items():
                name = key.split(".", 1)[0]
                prefix = f"{key.split('.', 1)[1]}: " if "." in key else ""
                self.add_error(name if name in self.fields else None, prefix + message)
        return data


class ExplainForm(forms.Form):
    tool = forms.CharField(max_length=200)
    arguments = forms.CharField(
        required=False,
        initial="{}",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text="The call's arguments as a JSON object.",
    )

    def clean_arguments(self) -> dict[str, Any]:
        text = self.cleaned_data.get("arguments") or "{}"
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise forms.ValidationError("must be a JSON object")
        return value


class TokenForm(forms.Form):
    label = forms.CharField(max_length=100, required=False)
    scopes = forms.MultipleChoiceField(
        choices=[(s, s) for s in SCOPE_VALUES],
        initial=list(DEFAULT_SCOPES),
        widget=forms.CheckboxSelectMultiple,
        required=False,  # none ticked: the default scopes
    )
    # Blank: the default (SYNTHORG_AGENT_TOKEN_TTL_DAYS); 0: never expires.
    expires_in_days = forms.IntegerField(min_value=0, max_value=3650, required=False)


class AgentFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Search")
    level = forms.ChoiceField(required=False)
    autonomy = forms.ChoiceField(required=False, choices=[("", "any"), *Autonomy.choices])
    active = forms.ChoiceField(
        required=False, choices=[("", "any"), ("yes", "active"), ("no", "inactive")]
    )
    denials = forms.BooleanField(required=False, label="Denied in the last 24 h")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        levels = synthorg_config().access_levels()
        level = self.fields["level"]
        assert isinstance(level, forms.ChoiceField)
        level.choices = [("", "any"), *((n, n) for n in levels)]
