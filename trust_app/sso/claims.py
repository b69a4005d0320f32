"""PURE: who an ID token says signed in, and the console roles their groups give."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from common.config.people import OidcSection
from common.roles import Role

# Usernames from a provider: ASCII only, so no look-alike letter can pass for another
# person's name on a card or in the record.
_USERNAME_RE: Final = re.compile(r"^[A-Za-z0-9_.@+-]{1,150}$")
_MAX_GROUPS: Final = 1000


class ClaimsRefused(Exception):
    """The provider's answer names no one the console can sign in; ``reason`` is safe to
    show the person and to record."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class SignedInPerson:
    issuer: str
    subject: str
    username: str
    roles: frozenset[Role]
    groups: tuple[str, ...]
    # Roles in teams: (team name, role).
    team_roles: frozenset[tuple[str, Role]] = frozenset()


def person_from_claims(claims: Mapping[str, Any], oidc: OidcSection) -> SignedInPerson:
    """The person the (already verified) ID token claims name, with their roles."""
    issuer = claims.get("iss")
    subject = claims.get("sub")
    if not isinstance(issuer, str) or not isinstance(subject, str) or not subject:
        raise ClaimsRefused("the provider's ID token names no subject")
    if len(subject) > 255 or len(issuer) > 500:
        raise ClaimsRefused("the provider's subject or issuer is too long")
    username = claims.get(oidc.username_claim)
    if not isinstance(username, str) or not username:
        raise ClaimsRefused(f"the provider sent no {oidc.username_claim!r} claim to name you")
    if unicodedata.normalize("NFC", username) != username or not _USERNAME_RE.match(username):
        raise ClaimsRefused(
            f"the provider's {oidc.username_claim!r} is not a plain username (ASCII letters, "
            "digits and _ . @ + -, at most 150)"
        )
    groups = _groups(claims.get(oidc.groups_claim))
    roles = frozenset(Role(oidc.roles[g]) for g in groups if g in oidc.roles)
    team_roles = frozenset(
        (oidc.team_roles[g].team, Role(oidc.team_roles[g].role))
        for g in groups
        if g in oidc.team_roles
    )
    if not roles and not team_roles:
        raise ClaimsRefused(
            "none of your groups at the provider gives a role in this console; an admin "
            "maps groups to roles in people.oidc.roles (or people.oidc.team_roles)"
        )
    return SignedInPerson(
        issuer=issuer,
        subject=subject,
        username=username,
        roles=roles,
        groups=groups,
        team_roles=team_roles,
    )


def _groups(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or len(value) > _MAX_GROUPS:
        raise ClaimsRefused("the provider's groups claim is not a list of names")
    return tuple(dict.fromkeys(g for g in value if isinstance(g, str)))
