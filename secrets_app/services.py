"""The only writers of secrets and grants; each writes its audit row in the same
transaction. Audit rows carry a secret's name and version, never its value."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit_app.record import Actor, audit_record
from common.errors import ConflictError, InvalidArgumentError, NotFoundError
from common.vocabulary.sealing import SealingRuleError, parse_injection, sealed_hosts_display
from secrets_app.keyring import SecretsKeyError
from secrets_app.keys import key_file_keep_only_newest, key_file_prepend_new_key, key_ring
from secrets_app.models import Secret, SecretGrant, SecretVersion
from secrets_app.redaction import stored_secrets_changed
from secrets_app.references import (
    NAME_RULE,
    SEALED_TOOLS,
    SECRET_SLOTS,
    is_valid_name,
    slots_text,
)
from trust_app.models import Agent
from trust_app.policy_changes import policy_changed_on_commit


class SecretsUnavailableError(ConflictError):
    """The broker's keys cannot be used; the message says what to configure."""

    code, http_status = "secrets_unavailable", 503


def _checked_name(name: str) -> str:
    if not isinstance(name, str) or not is_valid_name(name):
        raise InvalidArgumentError(f"a secret's name is {NAME_RULE}")
    return name


def _checked_value(value: str) -> str:
    minimum = settings.SYNTHORG_SECRET_MIN_LENGTH
    maximum = settings.SYNTHORG_SECRET_MAX_VALUE_CHARS
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError("a secret's value must not be empty")
    # Shorter values could not be redacted from results reliably.
    if len("".join(value.split())) < minimum:
        raise InvalidArgumentError(
            f"a secret's value must have at least {minimum} characters besides spaces, so "
            "that an echo of it can be recognised and redacted"
        )
    if len(value) > maximum:
        raise InvalidArgumentError(f"a secret's value may have at most {maximum} characters")
    if any(ch in value for ch in "\r\n\x00"):
        raise InvalidArgumentError(
            "a secret's value must be one line without NUL (it may go into a request header)"
        )
    return value


def _encrypt(value: str) -> tuple[str, str]:
    try:
        ring = key_ring()
    except SecretsKeyError as exc:
        raise SecretsUnavailableError(str(exc)) from exc
    return ring.encrypt(value), ring.newest_id


def secret_set(*, name: str, value: str, actor: Actor) -> SecretVersion:
    """Store `value` as the newest version of `name` (created, or restored when revoked)."""
    _checked_name(name)
    _checked_value(value)
    ciphertext, key_id = _encrypt(value)
    with transaction.atomic():
        secret, created = Secret.objects.select_for_update().get_or_create(name=name)
        restored = secret.revoked_at is not None
        secret.current_version += 1
        secret.revoked_at = None
        secret.save(update_fields=["current_version", "revoked_at", "updated_at"])
        version = SecretVersion.objects.create(
            secret=secret,
            number=secret.current_version,
            ciphertext=ciphertext,
            key_id=key_id,
            created_by=actor.name,
        )
        stored_secrets_changed()
        what = "created" if created else "restored" if restored else "rotated"
        audit_record(
            kind="secret.set",
            actor=actor,
            outcome=what,
            reason=f"secret {name} {what}: version {version.number}",
            data={"secret": name, "version": version.number, "key_id": key_id},
        )
    return version


def _secret(name: str, *, lock: bool = False) -> Secret:
    query = Secret.objects.select_for_update() if lock else Secret.objects
    secret = query.filter(name=name, revoked_at__isnull=True).first()
    if secret is None:
        raise NotFoundError(f"no active secret named {name!r}")
    return secret


def secret_revoke(*, name: str, actor: Actor) -> Secret:
    """Revoke `name`: its values are erased and its grants removed; the name and the
    version history stay for the record. Setting it again starts afresh."""
    with transaction.atomic():
        secret = _secret(name, lock=True)
        secret.revoked_at = timezone.now()
        secret.save(update_fields=["revoked_at", "updated_at"])
        SecretVersion.objects.filter(secret=secret).update(ciphertext="", key_id="")
        stored_secrets_changed()
        grants = [g.use for g in SecretGrant.objects.filter(secret=secret).select_related()]
        SecretGrant.objects.filter(secret=secret).delete()
        audit_record(
            kind="secret.revoked",
            actor=actor,
            outcome="revoked",
            reason=f"secret {name} revoked; {len(grants)} grant(s) removed",
            data={"secret": name, "versions": secret.current_version},
        )
        if grants:
            policy_changed_on_commit(
                agents=None, cause=f"{actor.name} revoked a secret", actor=actor
            )
    return secret


def _checked_use(tool: str, server: str, agent: Agent | None) -> tuple[str, str]:
    tool, server = (tool or "").strip(), (server or "").strip()
    if bool(tool) == bool(server):
        raise InvalidArgumentError(
            "a grant names either a tool or an upstream MCP server, not both and not neither"
        )
    if tool and agent is None:
        raise InvalidArgumentError(
            "a grant for a tool names the agent; only an upstream server shared by every "
            "agent is granted without one"
        )
    if tool and tool not in SECRET_SLOTS:
        raise InvalidArgumentError(
            f"{tool} {slots_text(tool)}; tools that take secrets: {', '.join(sorted(SECRET_SLOTS))}"
        )
    if server and not is_valid_name(server):
        raise InvalidArgumentError(f"an upstream MCP server's name is {NAME_RULE}")
    return tool, server


def _checked_sealing(tool: str, hosts: Iterable[str], inject: str) -> tuple[list[str], str]:
    """The grant's hosts (canonical) and injection; a tool whose program the agent
    controls needs hosts: its value only ever leaves through the egress proxy."""
    try:
        canonical = list(sealed_hosts_display(hosts))
        injection = parse_injection(inject).display() if canonical or inject else ""
    except SealingRuleError as exc:
        raise InvalidArgumentError(str(exc)) from exc
    if inject and not canonical:
        raise InvalidArgumentError(
            "an injection (--inject) says where the value goes in requests to the grant's "
            "hosts: name the hosts too (--host HOST[:PORT], repeatable)"
        )
    if tool in SEALED_TOOLS and not canonical:
        raise InvalidArgumentError(
            f"a grant for {tool} names the hosts the value may go to (--host HOST[:PORT] "
            f"or *.DOMAIN, repeatable): {tool} runs the agent's own program, which never "
            "holds the value; the console's egress proxy adds it to requests to those "
            "hosts only"
        )
    return canonical, injection


def secret_grant(
    *,
    name: str,
    agent: Agent | None,
    actor: Actor,
    tool: str = "",
    server: str = "",
    hosts: Iterable[str] = (),
    inject: str = "",
) -> SecretGrant:
    """Let `agent` use `name` with `tool`, or have the upstream server `server` started
    with it for the agent (or, with no agent, for a server shared by every agent).
    With `hosts`, the value is sealed: added by the console to requests to those hosts
    only, as `inject` says (common.vocabulary.sealing). Granting again changes the
    hosts and injection; the same grant again changes nothing."""
    tool, server = _checked_use(tool, server, agent)
    sealed_hosts, injection = _checked_sealing(tool, hosts, inject)
    with transaction.atomic():
        secret = _secret(name, lock=True)
        grant, created = SecretGrant.objects.select_for_update().get_or_create(
            secret=secret, agent=agent, tool=tool, server=server,
            defaults={"created_by": actor.name, "hosts": sealed_hosts, "inject": injection},
        )  # fmt: skip
        changed = not created and ((grant.hosts or []), grant.inject) != (
            sealed_hosts,
            injection,
        )
        if changed:
            grant.hosts, grant.inject = sealed_hosts, injection
            grant.save(update_fields=["hosts", "inject"])
        if created or changed:
            audit_record(
                kind="secret.granted",
                actor=actor,
                agent=agent,
                tool=tool,
                outcome="granted" if created else "changed",
                reason=f"{grant.holder} may use secret {name} with {grant.use}",
                data={
                    "secret": name,
                    "server": server,
                    "hosts": sealed_hosts,
                    "inject": injection,
                },
            )
            policy_changed_on_commit(
                agents=None if agent is None else [agent],
                cause=f"{actor.name} changed the agent's secret grants",
                actor=actor,
            )
    return grant


def secret_ungrant(
    *, name: str, agent: Agent | None, actor: Actor, tool: str = "", server: str = ""
) -> None:
    """Withdraw one grant; a grant that does not exist is a NotFoundError."""
    tool, server = _checked_use(tool, server, agent)
    holder = agent.name if agent is not None else "every agent"
    with transaction.atomic():
        deleted, _ = SecretGrant.objects.filter(
            secret__name=name, agent=agent, tool=tool, server=server
        ).delete()
        if not deleted:
            raise NotFoundError(f"{holder} has no grant of {name!r} for that use")
        audit_record(
            kind="secret.ungranted",
            actor=actor,
            agent=agent,
            tool=tool,
            outcome="ungranted",
            reason=f"{holder} may no longer use secret {name} with "
            f"{'server ' + server if server else tool}",
            data={"secret": name, "server": server},
        )
        policy_changed_on_commit(
            agents=None if agent is None else [agent],
            cause=f"{actor.name} changed the agent's secret grants",
            actor=actor,
        )


def secrets_rotate_keys(*, actor: Actor, new_key: bool = False) -> dict[str, Any]:
    """Re-encrypt every stored value under the newest key. With `new_key` (key file
    only) a fresh key is made first, and the retired keys dropped afterwards."""
    try:
        ring = key_file_prepend_new_key() if new_key else key_ring()
    except SecretsKeyError as exc:
        raise SecretsUnavailableError(str(exc)) from exc
    with transaction.atomic():
        versions = list(SecretVersion.objects.select_for_update().exclude(ciphertext=""))
        for version in versions:
            version.ciphertext = ring.rotate(version.ciphertext)
            version.key_id = ring.newest_id
        SecretVersion.objects.bulk_update(versions, ["ciphertext", "key_id"])
        stored_secrets_changed()
        audit_record(
            kind="secret.keys_rotated",
            actor=actor,
            outcome="rotated",
            reason=f"{len(versions)} stored value(s) re-encrypted under key {ring.newest_id}",
            data={"values": len(versions), "key_id": ring.newest_id},
        )
    if new_key:
        key_file_keep_only_newest()
    return {"values": len(versions), "key_id": ring.newest_id}
