"""PURE: which program names are one tool (``common.vocabulary.programs``, shared with
the policy's refusals)."""

from __future__ import annotations

from common.vocabulary.programs import FAMILY_OF, MULTI_CALL, family_set, program_family

__all__ = ["FAMILY_OF", "MULTI_CALL", "family_set", "program_family"]
