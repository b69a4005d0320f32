"""The writer of people who sign in through the organisation's provider.

A person is found by (issuer, subject), never by name: the first sign-in creates them
with the provider's username (refused when a local account or another identity holds
that name: a provider's user called "admin" never becomes the console's admin); each
sign-in sets their roles, organisation-wide and in teams, to exactly what the provider's
groups give now (a change is audited with both sides). People made here have no
password and are never superusers.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from audit_app.record import Actor, audit_record
from common.roles import Role, forget_roles, org_roles_of
from trust_app.models import ExternalIdentity
from trust_app.services.agents import groups_ensure
from trust_app.services.teams import team_memberships_sync
from trust_app.sso.claims import ClaimsRefused, SignedInPerson

SIGNIN_SUCCEEDED_KIND = "signin.succeeded"
ROLES_CHANGED_KIND = "person.roles_changed"


def _sorted(roles: frozenset[Role] | set[Role]) -> list[str]:
    return sorted(role.value for role in roles)


@transaction.atomic
def person_sign_in_external(*, signed_in: SignedInPerson, address: str) -> Any:
    """The person ``signed_in`` names, created or brought up to date; ClaimsRefused
    when their name belongs to someone else or they were switched off here."""
    user_model = get_user_model()
    identity = (
        ExternalIdentity.objects.select_for_update()
        .select_related("person")
        .filter(issuer=signed_in.issuer, subject=signed_in.subject)
        .first()
    )
    if identity is None:
        if user_model.objects.filter(username__iexact=signed_in.username).exists():
            raise ClaimsRefused(
                f"an account named {signed_in.username!r} already exists here and is not "
                "linked to your identity at the provider; an admin resolves it"
            )
        person = user_model.objects.create_user(username=signed_in.username, password=None)
        person.set_unusable_password()
        person.save(update_fields=["password"])
        identity = ExternalIdentity.objects.create(
            person=person, issuer=signed_in.issuer, subject=signed_in.subject
        )
        audit_record(
            kind="person.created",
            actor=Actor.system("single sign-on"),
            outcome="created",
            data={
                "username": person.get_username(),
                "roles": _sorted(signed_in.roles),
                "issuer": signed_in.issuer,
                "source": "oidc",
            },
        )
    person = identity.person
    if not person.is_active:
        raise ClaimsRefused("your account here is switched off; an admin can switch it on")
    before = set(org_roles_of(person))
    if before != set(signed_in.roles):
        groups_ensure()
        person.groups.remove(*Group.objects.filter(name__in=[r.group for r in Role]))
        person.groups.add(*Group.objects.filter(name__in=[r.group for r in signed_in.roles]))
        audit_record(
            kind=ROLES_CHANGED_KIND,
            actor=Actor.system("single sign-on"),
            outcome="changed",
            data={
                "username": person.get_username(),
                "from": _sorted(before),
                "to": _sorted(signed_in.roles),
                "groups": list(signed_in.groups)[:50],
                "source": "oidc",
            },
        )
    team_memberships_sync(
        person=person,
        grants=signed_in.team_roles,
        actor=Actor.system("single sign-on"),
        source="oidc",
    )
    forget_roles(person)
    in_teams = sorted(f"{role.value}@{team}" for team, role in signed_in.team_roles)
    identity.roles = _sorted(signed_in.roles) + in_teams
    identity.last_sign_in_at = timezone.now()
    identity.save(update_fields=["roles", "last_sign_in_at"])
    audit_record(
        kind=SIGNIN_SUCCEEDED_KIND,
        actor=Actor.person(person),
        outcome="signed_in",
        data={"method": "oidc", "issuer": signed_in.issuer, "address": address},
    )
    return person
