"""A loopback SMTP server of the tests' own (aiosmtpd): every message it is handed,
parsed as a mail reader would, with the envelope's recipients."""

from __future__ import annotations

import email
import email.policy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

from common.testing import free_port


@dataclass
class Received:
    message: EmailMessage
    recipients: list[str]
    raw: bytes


@dataclass
class SmtpInbox:
    port: int
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        raw = bytes(envelope.content)
        # SMTP carries lines ending in CRLF; a mail reader shows them as plain lines.
        parsed = email.message_from_bytes(raw.replace(b"\r\n", b"\n"), policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        with self.lock:
            self.received.append(Received(parsed, list(envelope.rcpt_tos), raw))
        return "250 Message accepted for delivery"

    def messages(self) -> list[Received]:
        with self.lock:
            return list(self.received)


@contextmanager
def smtp_inbox(settings: Any) -> Iterator[SmtpInbox]:
    """Start the server and point Django's SMTP backend at it for this test."""
    inbox = SmtpInbox(free_port())
    controller = Controller(inbox, hostname="127.0.0.1", port=inbox.port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = inbox.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    try:
        yield inbox
    finally:
        controller.stop()
