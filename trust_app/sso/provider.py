"""The organisation's OpenID Connect provider, through Authlib.

Authlib (``authlib.integrations.django_client``) reads the provider's discovery
document, sends the authorization request with a state, a nonce and a PKCE challenge
(S256), exchanges the code with the verifier, and checks the ID token: its signature
by a key of the provider's JWKS, its issuer (the discovery document's, which must be
the configured one), audience (this client), expiry and nonce.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from common.config.people import OidcSection
from common.settings_config import synthorg_config

# The provider's answers (discovery, keys, tokens) are awaited this long, in seconds.
PROVIDER_TIMEOUT_SECONDS = 10


class ProviderUnavailable(Exception):
    """Single sign-on is not configured, or its client secret is missing."""


def configured() -> OidcSection | None:
    """``people.oidc``, when single sign-on is configured."""
    return synthorg_config().people.oidc


def provider_client() -> Any:
    """The Authlib client of the configured provider (one per config)."""
    oidc = configured()
    if oidc is None:
        raise ProviderUnavailable("single sign-on is not configured")
    secret = os.environ.get(oidc.client_secret_env, "")
    if not secret:
        raise ProviderUnavailable(
            f"single sign-on's client secret is missing (environment variable "
            f"{oidc.client_secret_env})"
        )
    return _client(oidc.issuer, oidc.client_id, secret, " ".join(oidc.scopes))


@functools.lru_cache(maxsize=4)
def _client(issuer: str, client_id: str, secret: str, scope: str) -> Any:
    from authlib.integrations.django_client import OAuth

    registry = OAuth()
    registry.register(
        name="organisation",
        client_id=client_id,
        client_secret=secret,
        server_metadata_url=f"{issuer}/.well-known/openid-configuration",
        client_kwargs={
            "scope": scope,
            "code_challenge_method": "S256",
            "default_timeout": PROVIDER_TIMEOUT_SECONDS,
        },
    )
    return registry.create_client("organisation")


def forget_clients() -> None:
    """Drop cached clients (the config or the secret changed)."""
    _client.cache_clear()
