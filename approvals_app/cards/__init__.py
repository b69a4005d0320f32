"""Approval cards: a call shown as a person thinks of it.

``model`` and ``render`` (with ``effect``, ``characters``, ``text``, ``sql``) are PURE: plain
values in, a display model out. ``build`` is the Django side: it loads what the
core needs (the current file in the workspace, the tool's argument order, the
agent's record and level) and calls the core. The inbox template renders the
display model, on page load and in the fragments the live inbox pushes, so the
browser never re-implements it.
"""
