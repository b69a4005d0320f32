"""The console's own certificate authority for sealed HTTPS, trusted only inside sandboxes.

To add a sealed secret to an HTTPS request, the egress proxy ends the sandbox's TLS
itself, with a certificate for the destination signed by this authority, and opens
its own TLS to the real server (verified against the system's trust store, or the
admin's ``SYNTHORG_EGRESS_UPSTREAM_CA_FILE``; nothing the agent can choose). The
sandbox trusts the authority through a bundle in its egress directory
(``mount.TRUST_BUNDLE``: the system's roots plus this one); nothing outside trusts it.

The key and certificate live in ``<var>/egress_ca/`` (0700, key 0600), made on first
use by whichever process gets there first; leaf certificates are made per host,
kept in memory (``ssl`` loads a chain from a file: written to ``leaves/`` and removed
once loaded).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import ssl
import tempfile
import threading
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_KEY: Final = "ca.key"
CA_CERT: Final = "ca.pem"
SYSTEM_BUNDLES: Final = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
)
CA_LIFETIME: Final = datetime.timedelta(days=3650)
LEAF_LIFETIME: Final = datetime.timedelta(days=7)
LEAF_CACHE: Final = 256


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (0600) atomically; an existing file is kept (first wins)."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".new-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        os.unlink(temporary)


class EgressAuthority:
    """Issues server certificates for sealed destinations; one per process and directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._leaf_key = ec.generate_private_key(ec.SECP256R1())
        self._leaf_key_pem = self._leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        self._ca_key, self._ca_cert = self._load_or_create()
        self.certificate_pem = self._ca_cert.public_bytes(serialization.Encoding.PEM)

    def _load_or_create(self) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        (self.directory / "leaves").mkdir(mode=0o700, exist_ok=True)
        key_path, cert_path = self.directory / CA_KEY, self.directory / CA_CERT
        if not cert_path.exists():
            key = ec.generate_private_key(ec.SECP256R1())
            name = x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "SynthOrg Console"),
                    x509.NameAttribute(NameOID.COMMON_NAME, "SynthOrg Console sandbox egress"),
                ]
            )
            now = _now()
            cert = (
                x509.CertificateBuilder()
                .subject_name(name)
                .issuer_name(name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + CA_LIFETIME)
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(
                    x509.KeyUsage(
                        digital_signature=True,
                        key_cert_sign=True,
                        crl_sign=True,
                        content_commitment=False,
                        key_encipherment=False,
                        data_encipherment=False,
                        key_agreement=False,
                        encipher_only=False,
                        decipher_only=False,
                    ),
                    critical=True,
                )
                .add_extension(
                    x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
                )
                .sign(key, hashes.SHA256())
            )
            # The key first: a certificate is never there without its key.
            _write_private(
                key_path,
                key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                ),
            )
            _write_private(cert_path, cert.public_bytes(serialization.Encoding.PEM))
        loaded_key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        if not isinstance(loaded_key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{key_path} is not the egress authority's EC key")
        return loaded_key, x509.load_pem_x509_certificate(cert_path.read_bytes())

    def server_context(self, host: str) -> ssl.SSLContext:
        """A TLS server context presenting a certificate for ``host`` (HTTP/1.1 only)."""
        with self._lock:
            context = self._contexts.get(host)
            if context is not None:
                return context
        chain = self._leaf_file(host)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(chain)
        finally:
            os.unlink(chain)  # loaded: the key stays in memory only
        # The proxy reads requests as HTTP/1.1: a client offering h2 gets 1.1.
        context.set_alpn_protocols(["http/1.1"])
        with self._lock:
            if len(self._contexts) >= LEAF_CACHE:
                self._contexts.pop(next(iter(self._contexts)))
            self._contexts[host] = context
        return context

    def _leaf_file(self, host: str) -> str:
        now = _now()
        try:
            alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            alt = x509.DNSName(host)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host[:64])]))
            .issuer_name(self._ca_cert.subject)
            .public_key(self._leaf_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + LEAF_LIFETIME)
            .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._ca_key.public_key()),
                critical=False,
            )
            .sign(self._ca_key, hashes.SHA256())
        )
        data = self._leaf_key_pem + cert.public_bytes(serialization.Encoding.PEM)
        fd, path = tempfile.mkstemp(dir=self.directory / "leaves", suffix=".pem")
        with os.fdopen(fd, "wb") as handle:  # mkstemp: 0600
            handle.write(data)
        return path

    def trust_bundle(self) -> bytes:
        """The system's roots and this authority, for a sandbox's ``TRUST_BUNDLE``."""
        roots = b""
        for candidate in SYSTEM_BUNDLES:
            with contextlib.suppress(OSError):
                roots = Path(candidate).read_bytes()
                break
        return roots.rstrip(b"\n") + b"\n" + self.certificate_pem


def upstream_context(ca_file: str | None = None) -> ssl.SSLContext:
    """The proxy's own TLS to the real server: verified, HTTP/1.1."""
    context = ssl.create_default_context(cafile=ca_file or None)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    return context
