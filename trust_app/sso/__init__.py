"""Single sign-on through the organisation's OpenID Connect provider (``people.oidc``).

``claims`` (pure) reads who the provider says signed in and the roles its groups give;
``provider`` talks to the provider through Authlib (discovery, PKCE, the ID token's
signature, issuer, audience, expiry and nonce); ``views`` are the sign-in, callback and
sign-out pages; ``backends`` keep password sign-in to the accounts the config allows.
The person's record is written by ``trust_app.services.people_sso``.
"""
