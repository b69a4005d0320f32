"""``ForgingProvider``: an OpenID provider of the test's own that speaks the protocol
(discovery, JWKS, an authorization endpoint that answers at once, a token endpoint that
checks the PKCE verifier) and hands out the ID token a test asks for: signed by a key
outside its JWKS, for another issuer or audience, expired, with another nonce, unsigned
(``alg: none``), or none at all; ``good`` is the control. Loopback only."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import secrets
import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from joserfc import jwt
from joserfc.jwk import RSAKey

MODES = (
    "good",
    "foreign_key",
    "wrong_issuer",
    "wrong_audience",
    "expired",
    "wrong_nonce",
    "alg_none",
    "no_id_token",
)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class ForgingProvider:
    def __init__(self, *, client_id: str, client_secret: str, claims: dict[str, Any]) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.claims = claims
        self.mode = "good"
        self.key = RSAKey.generate_key(2048, parameters={"kid": "published", "use": "sig"})
        self.foreign = RSAKey.generate_key(2048, parameters={"kid": "published", "use": "sig"})
        self.pending: dict[str, dict[str, str]] = {}
        self.token_requests = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _json(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                path, _, query = self.path.partition("?")
                if path == "/.well-known/openid-configuration":
                    self._json(200, outer.discovery())
                elif path == "/jwks":
                    self._json(200, {"keys": [outer.key.as_dict(private=False)]})
                elif path == "/authorize":
                    asked = {k: v[0] for k, v in parse_qs(query).items()}
                    code = secrets.token_urlsafe(16)
                    outer.pending[code] = asked
                    back = (
                        asked["redirect_uri"]
                        + "?"
                        + urlencode({"code": code, "state": asked.get("state", "")})
                    )
                    self.send_response(302)
                    self.send_header("Location", back)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                outer.token_requests += 1
                expected = (
                    "Basic "
                    + base64.b64encode(f"{outer.client_id}:{outer.client_secret}".encode()).decode()
                )
                if self.headers.get("Authorization") != expected:
                    self._json(401, {"error": "invalid_client"})
                    return
                asked = outer.pending.pop(form.get("code", ""), None)
                if asked is None:
                    self._json(400, {"error": "invalid_grant"})
                    return
                verifier = form.get("code_verifier", "")
                challenge = _b64(hashlib.sha256(verifier.encode()).digest())
                if asked.get("code_challenge") != challenge:
                    self._json(400, {"error": "invalid_grant", "error_description": "PKCE"})
                    return
                self._json(200, outer.token_answer(asked))

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))
        self._thread.daemon = True

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        }

    def token_answer(self, asked: dict[str, str]) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": self.client_id,
            "iat": now,
            "exp": now + 300,
            "nonce": asked.get("nonce", ""),
            **self.claims,
        }
        key = self.key
        if self.mode == "foreign_key":
            key = self.foreign
        elif self.mode == "wrong_issuer":
            claims["iss"] = "http://127.0.0.1:9/elsewhere"
        elif self.mode == "wrong_audience":
            claims["aud"] = "another-client"
        elif self.mode == "expired":
            claims["iat"], claims["exp"] = now - 7200, now - 3600
        elif self.mode == "wrong_nonce":
            claims["nonce"] = "a-nonce-from-another-sign-in"
        answer: dict[str, Any] = {
            "access_token": secrets.token_urlsafe(16),
            "token_type": "Bearer",
            "expires_in": 300,
        }
        if self.mode == "alg_none":
            header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
            answer["id_token"] = f"{header}.{_b64(json.dumps(claims).encode())}."
        elif self.mode != "no_id_token":
            answer["id_token"] = jwt.encode({"alg": "RS256", "kid": "published"}, claims, key)
        return answer

    def __enter__(self) -> ForgingProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def follow_authorize(url: str) -> str:
    """The forging provider's authorization endpoint answers at once: its redirect."""
    import httpx

    answer = httpx.get(url, follow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text[:300]
    location = answer.headers["location"]
    assert urlsplit(location).path == "/accounts/sso/callback/", location
    return location
