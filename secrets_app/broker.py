"""The broker: who may use which secret where, and the values for one use.

Two doors, one rule (an active secret, a grant for this agent and this use):
- `secrets_for_call(agent=, tool=, names=, invocation_id=)`: the values a
  worker substitutes into a call's secret slots (see `references`);
- `secrets_for_server(agent=, server=, credentials=, invocation_id=)`: the
  values an upstream MCP server is started with, by `ENV_OR_HEADER` name.

A name that does not exist, one that is revoked and one that is not granted
are refused with the same words (`NOT_GRANTED`), so a refusal never confirms
that a name exists. Every use is audited (secret name, agent, tool or server,
invocation) in the same transaction as `last_used_at`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from audit_app.record import Actor, audit_record
from common.errors import ForbiddenError
from secrets_app.keyring import SecretsKeyError, SecretValueUnreadableError
from secrets_app.keys import key_ring
from secrets_app.models import Secret, SecretGrant, SecretVersion
from trust_app.models import Agent

NOT_GRANTED = (
    "refers to a secret this agent may not use here (no such secret, or no grant of it "
    "for this use): an admin grants secrets on the secrets page"
)


class SecretNotGrantedError(ForbiddenError):
    """A reference the agent may not use; the message never says whether the name exists."""

    # The error code an invocation that failed this way records (the API answers 403).
    invocation_error = "secret_not_granted"


class SecretUnavailableError(ForbiddenError):
    """A granted secret cannot be read now (keys missing or wrong); nothing was run."""

    invocation_error = "secret_unavailable"


def ungranted_names(
    *, agent: Agent | None, names: Iterable[str], tool: str = "", server: str = ""
) -> list[str]:
    """The names among `names` that `agent` (None: a server shared by every agent)
    may not use for this tool or server."""
    wanted = set(names)
    holder = {"agent": agent} if agent is not None else {"agent__isnull": True}
    granted = set(
        SecretGrant.objects.filter(
            **holder,
            tool=tool,
            server=server,
            secret__name__in=wanted,
            secret__revoked_at__isnull=True,
        ).values_list("secret__name", flat=True)
    )
    return sorted(wanted - granted)


@dataclass(frozen=True)
class GrantedSecret:
    """A secret's value for one use, with where its grant lets it go (sealed use)."""

    name: str
    value: str = field(repr=False)
    hosts: tuple[str, ...] = ()
    """Canonical host rules; empty: the grant names none (not a sealed use)."""
    inject: str = ""


def _values(
    *,
    agent: Agent | None,
    names: list[str],
    tool: str,
    server: str,
    invocation_id: uuid.UUID | None,
) -> dict[str, GrantedSecret]:
    if not names:
        return {}
    try:
        ring = key_ring()
    except SecretsKeyError as exc:
        raise SecretUnavailableError(
            "a secret this call uses cannot be read now; an admin must configure the secrets keys"
        ) from exc
    use = {"tool": tool, "server": server}
    holder = {"agent": agent} if agent is not None else {"agent__isnull": True}
    with transaction.atomic():
        if ungranted_names(agent=agent, names=names, **use):
            raise SecretNotGrantedError(f"this call {NOT_GRANTED}")
        grants = {
            g.secret.name: g
            for g in SecretGrant.objects.select_related("secret").filter(
                **holder, **use, secret__name__in=names
            )
        }
        secrets = {s.name: s for s in Secret.objects.filter(name__in=names)}
        versions = {
            v.secret.name: v
            for v in SecretVersion.objects.select_related("secret").filter(
                secret__in=secrets.values()
            )
            if v.number == v.secret.current_version and v.ciphertext
        }
        values: dict[str, GrantedSecret] = {}
        for name in names:
            version = versions.get(name)
            grant = grants.get(name)
            if version is None or grant is None:
                raise SecretNotGrantedError(f"this call {NOT_GRANTED}")
            try:
                values[name] = GrantedSecret(
                    name=name,
                    value=ring.decrypt(version.ciphertext),
                    hosts=tuple(grant.hosts or ()),
                    inject=grant.inject,
                )
            except SecretValueUnreadableError as exc:
                raise SecretUnavailableError(
                    "a secret this call uses cannot be read with the configured keys; an "
                    "admin must check the secrets keys"
                ) from exc
        now = timezone.now()
        Secret.objects.filter(name__in=names).update(last_used_at=now)
        for name in names:
            hosts = list(values[name].hosts)
            sealed = f", sealed for {', '.join(hosts)}" if hosts else ""
            audit_record(
                kind="secret.used",
                actor=Actor.system("worker"),
                agent=agent,
                invocation_id=invocation_id,
                tool=tool,
                outcome="used",
                reason=f"secret {name} used by {agent.name if agent else 'every agent'} with "
                f"{'server ' + server if server else tool}{sealed}",
                data={
                    "secret": name,
                    "version": versions[name].number,
                    "server": server,
                    **({"hosts": hosts, "inject": values[name].inject} if hosts else {}),
                },
            )
    return values


def secrets_for_call(
    *,
    agent: Agent,
    tool: str,
    names: Iterable[str],
    invocation_id: uuid.UUID | None = None,
) -> dict[str, str]:
    """The values of `names` for one call of `tool` by `agent`, each use audited.

    SecretNotGrantedError (generic words) when any is not granted;
    SecretUnavailableError when the keys cannot read it.
    """
    return {
        name: granted.value
        for name, granted in granted_secrets_for_call(
            agent=agent, tool=tool, names=names, invocation_id=invocation_id
        ).items()
    }


def granted_secrets_for_call(
    *,
    agent: Agent,
    tool: str,
    names: Iterable[str],
    invocation_id: uuid.UUID | None = None,
) -> dict[str, GrantedSecret]:
    """As `secrets_for_call`, with each grant's hosts and injection (sealed use)."""
    unique = list(dict.fromkeys(names))
    return _values(agent=agent, names=unique, tool=tool, server="", invocation_id=invocation_id)


def secrets_for_server(
    *,
    agent: Agent | None,
    server: str,
    credentials: Mapping[str, str],
    invocation_id: uuid.UUID | None = None,
) -> dict[str, str]:
    """`{ENV_OR_HEADER: value}` for the upstream MCP server `server` started for `agent`
    (None: one process shared by every agent), from the server's configured
    `{ENV_OR_HEADER: secret name}`; each use audited.

    Each name needs a grant for `server=server` to that agent (or, for a shared
    server, a grant without an agent). SecretNotGrantedError / SecretUnavailableError
    otherwise: start the server without it and say so; never fall back to no secret
    silently."""
    return {
        target: granted.value
        for target, granted in granted_secrets_for_server(
            agent=agent, server=server, credentials=credentials, invocation_id=invocation_id
        ).items()
    }


def granted_secrets_for_server(
    *,
    agent: Agent | None,
    server: str,
    credentials: Mapping[str, str],
    invocation_id: uuid.UUID | None = None,
) -> dict[str, GrantedSecret]:
    """As `secrets_for_server`, with each grant's hosts and injection (sealed use)."""
    unique = list(dict.fromkeys(credentials.values()))
    values = _values(agent=agent, names=unique, tool="", server=server, invocation_id=invocation_id)
    return {target: values[name] for target, name in credentials.items()}


def secret_for_connection(
    *,
    agent: Agent,
    connection: str,
    name: str,
    tool: str,
    invocation_id: uuid.UUID | None = None,
) -> str:
    """The value of `name`, the stored secret a configured connection authenticates with.

    The connection's config is the grant (admins write it; agents are granted the
    connection, never the secret). SecretUnavailableError when the secret is missing,
    revoked or unreadable, in words that do not say which. The use is audited."""
    unavailable = (
        f"the credential of connection {connection} cannot be used now; an admin must check "
        "the connection's auth.secret on the secrets page"
    )
    try:
        ring = key_ring()
    except SecretsKeyError as exc:
        raise SecretUnavailableError(unavailable) from exc
    with transaction.atomic():
        secret = Secret.objects.filter(name=name, revoked_at__isnull=True).first()
        version = (
            SecretVersion.objects.filter(secret=secret, number=secret.current_version).first()
            if secret is not None
            else None
        )
        if secret is None or version is None or not version.ciphertext:
            raise SecretUnavailableError(unavailable)
        try:
            value = ring.decrypt(version.ciphertext)
        except SecretValueUnreadableError as exc:
            raise SecretUnavailableError(unavailable) from exc
        Secret.objects.filter(id=secret.id).update(last_used_at=timezone.now())
        audit_record(
            kind="secret.used",
            actor=Actor.system("worker"),
            agent=agent,
            invocation_id=invocation_id,
            tool=tool,
            outcome="used",
            reason=f"secret {name} used by {agent.name} with {tool} for connection {connection}",
            data={"secret": name, "version": version.number, "connection": connection},
        )
    return value
