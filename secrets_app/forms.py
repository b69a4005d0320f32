"""Forms of the secrets page. A value field is never rendered back with its value."""

from __future__ import annotations

from django import forms

from secrets_app.references import SECRET_SLOTS


class SecretSetForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="letters, digits, _ . - (e.g. GH_TOKEN)")
    value = forms.CharField(
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        strip=False,
        help_text="one line; stored encrypted and never shown again",
    )


class SecretRotateForm(forms.Form):
    value = forms.CharField(
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        strip=False,
        label="New value",
    )


class SecretGrantForm(forms.Form):
    agent = forms.CharField(
        max_length=100,
        required=False,
        help_text="the agent's name (none: an upstream server shared by every agent)",
    )
    tool = forms.ChoiceField(
        choices=[("", "—")] + [(name, name) for name in sorted(SECRET_SLOTS)], required=False
    )
    server = forms.CharField(
        max_length=200, required=False, help_text="or an upstream MCP server's name"
    )
    hosts = forms.CharField(
        max_length=4000,
        required=False,
        help_text=(
            "where the console adds the value (HOST[:PORT] or *.DOMAIN, separated by commas "
            "or spaces); required for tools that run the agent's own program"
        ),
    )
    inject = forms.CharField(
        max_length=140,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "bearer"}),
        help_text="bearer, basic, basic:<user>, header:<Name> or query:<param>",
    )

    def host_list(self) -> list[str]:
        """The hosts as typed: separated by commas or white space."""
        raw = self.cleaned_data.get("hosts") or ""
        return [part for part in raw.replace(",", " ").split() if part]
