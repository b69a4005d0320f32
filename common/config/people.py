"""PURE: the ``people`` config section: who may sign in, and how.

``oidc`` signs people in through the organisation's OpenID Connect provider: the
authorization code flow with PKCE, the ID token checked (signature by the provider's
keys, issuer, audience, expiry, nonce), and the provider's groups mapped to the
console's roles, organisation-wide (``roles``) or in one team (``team_roles``). The
client secret is named by environment variable, never written in the file.
``local_accounts: false`` turns password sign-in off for everyone except the
``break_glass`` accounts (an admin who can still get in when the provider is away).
"""

from __future__ import annotations

import re
from typing import Final

from pydantic import Field, ValidationInfo, field_validator, model_validator

from common.roles import ROLE_NAMES
from common.strict import StrictModel
from common.vocabulary.network import NetworkTargetError, parse_url

_ENV_NAME_RE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_CLAIM_RE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")
_USERNAME_RE: Final = re.compile(r"^[\w.@+-]{1,150}$")
# Scopes a console asks for; the provider may define more.
_SCOPE_RE: Final = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]{1,64}$")
_TEAM_RE: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")


class TeamRoleGrant(StrictModel):
    """A role in one team, as a provider's group gives it."""

    team: str
    role: str

    @field_validator("team")
    @classmethod
    def _team(cls, value: str) -> str:
        if not _TEAM_RE.match(value):
            raise ValueError(f"team: {value!r} is not a team name (lower-case, digits, - _)")
        return value

    @field_validator("role")
    @classmethod
    def _role(cls, value: str) -> str:
        if value not in ROLE_NAMES:
            raise ValueError(f"role: {value!r}; roles are {', '.join(ROLE_NAMES)}")
        return value


class OidcSection(StrictModel):
    """``people.oidc``: one OpenID Connect provider."""

    # The provider's issuer URL; its discovery document is read from
    # <issuer>/.well-known/openid-configuration.
    issuer: str
    client_id: str
    # The environment variable that holds the client secret.
    client_secret_env: str
    # What the sign-in page's button says.
    label: str = "Sign in with single sign-on"
    scopes: tuple[str, ...] = ("openid", "profile", "email")
    # The claim that names the person (their username here) and the one that lists
    # their groups.
    username_claim: str = "preferred_username"
    groups_claim: str = "groups"
    # The provider's group names and the console role each gives organisation-wide
    # (operator, admin, auditor), or in one team ({team: payments, role: operator}; the
    # team is made at the first sign-in that names it). A person in no mapped group is
    # refused.
    team_roles: dict[str, TeamRoleGrant] = {}
    # Checked after team_roles (and when left out): one of the two must map a group.
    roles: dict[str, str] = Field(default_factory=dict, validate_default=True)

    @field_validator("issuer")
    @classmethod
    def _issuer(cls, value: str) -> str:
        try:
            parse_url(value, schemes=frozenset({"http", "https"}))
        except NetworkTargetError as exc:
            raise ValueError(f"issuer: {exc}") from exc
        if "?" in value or "#" in value:
            raise ValueError("issuer: a URL without query or fragment")
        return value.rstrip("/")

    @field_validator("client_id")
    @classmethod
    def _client_id(cls, value: str) -> str:
        if not value.strip() or len(value) > 255:
            raise ValueError("client_id: 1-255 characters")
        return value

    @field_validator("client_secret_env")
    @classmethod
    def _secret_env(cls, value: str) -> str:
        if not _ENV_NAME_RE.match(value):
            raise ValueError("client_secret_env: an environment variable name")
        return value

    @field_validator("label")
    @classmethod
    def _label(cls, value: str) -> str:
        if not value.strip() or len(value) > 80:
            raise ValueError("label: 1-80 characters")
        return value

    @field_validator("scopes")
    @classmethod
    def _scopes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for scope in value:
            if not _SCOPE_RE.match(scope):
                raise ValueError(f"scopes: {scope!r} is not a scope token")
        if "openid" not in value:
            raise ValueError("scopes: must include 'openid'")
        return tuple(dict.fromkeys(value))

    @field_validator("username_claim", "groups_claim")
    @classmethod
    def _claim(cls, value: str) -> str:
        if not _CLAIM_RE.match(value):
            raise ValueError("a claim name: letters, digits, '_', '.', ':', '-'")
        return value

    @field_validator("roles")
    @classmethod
    def _roles(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        if not value and not info.data.get("team_roles"):
            raise ValueError(
                "roles: map at least one of the provider's groups to a role (here, or to a "
                "role in a team in team_roles)"
            )
        for group, role in value.items():
            if not group.strip() or len(group) > 255:
                raise ValueError(f"roles: group name {group!r} must be 1-255 characters")
            if role not in ROLE_NAMES:
                raise ValueError(
                    f"roles: {group!r} maps to {role!r}; roles are {', '.join(ROLE_NAMES)}"
                )
        return value

    @field_validator("team_roles")
    @classmethod
    def _team_groups(cls, value: dict[str, TeamRoleGrant]) -> dict[str, TeamRoleGrant]:
        for group in value:
            if not group.strip() or len(group) > 255:
                raise ValueError(f"team_roles: group name {group!r} must be 1-255 characters")
        return value


class PeopleSection(StrictModel):
    """``people``: password sign-in and single sign-on."""

    local_accounts: bool = True
    # Accounts that may sign in with a password when local accounts are off.
    break_glass: tuple[str, ...] = ()
    oidc: OidcSection | None = None

    @field_validator("break_glass")
    @classmethod
    def _break_glass(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _USERNAME_RE.match(name):
                raise ValueError(f"break_glass: {name!r} is not a username")
        return tuple(dict.fromkeys(value))

    @model_validator(mode="after")
    def _someone_can_sign_in(self) -> PeopleSection:
        if not self.local_accounts and self.oidc is None and not self.break_glass:
            raise ValueError(
                "local_accounts: false with no oidc provider and no break_glass account "
                "leaves nobody able to sign in"
            )
        return self

    def password_allowed(self, username: str) -> bool:
        """Whether ``username`` may sign in with a password."""
        return self.local_accounts or username in self.break_glass
