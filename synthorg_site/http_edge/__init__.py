"""The HTTP edge of /api/ and /mcp/: every refusal answered in the error envelope of
API.md (Django's own 404, 405, 500 and CSRF pages included), bodies read whole and
size-limited however they are sent, and refusals audited."""
