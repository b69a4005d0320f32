"""An OpenID provider of the tests' own on loopback (panva's oidc-provider, run by node)."""
