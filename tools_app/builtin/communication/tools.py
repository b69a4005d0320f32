"""The communication tools, each registered only when its part of the
``communication`` section is configured."""

from __future__ import annotations

from typing import Final

from tools_app.builtin.communication.email import send_email
from tools_app.builtin.communication.slack import slack_post

TOOLS: Final = (send_email, slack_post)
