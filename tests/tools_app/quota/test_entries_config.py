"""``sandboxing.workspace_quota_entries``: a positive count, or null to switch it off."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from common.config.sandbox import DEFAULT_WORKSPACE_QUOTA_ENTRIES, SandboxingConfig
from tools_app.quota.guard import WorkspaceQuotaGuard, guard_workspace
from tools_app.sandbox.backends.subprocess import SubprocessSandbox


def test_the_entry_limit_is_on_by_default_and_takes_a_count_or_null() -> None:
    assert SandboxingConfig().workspace_quota_entries == DEFAULT_WORKSPACE_QUOTA_ENTRIES == 100_000
    loaded = SandboxingConfig.model_validate({"workspace_quota_entries": 5000})
    assert loaded.workspace_quota_entries == 5000
    off = SandboxingConfig.model_validate({"workspace_quota_entries": None})
    assert off.workspace_quota_entries is None


@pytest.mark.parametrize("value", [0, -1, "lots"])
def test_an_entry_limit_that_is_not_a_positive_count_is_refused_at_load(value: object) -> None:
    with pytest.raises(ValidationError) as refused:
        SandboxingConfig.model_validate({"workspace_quota_entries": value})
    assert "workspace_quota_entries" in str(refused.value)


def test_the_guard_wraps_for_the_entry_limit_alone() -> None:
    backend = SubprocessSandbox()
    try:
        alone = guard_workspace(backend, None, quota_entries=10)
        assert isinstance(alone, WorkspaceQuotaGuard)
        assert (alone.quota_bytes, alone.quota_entries) == (None, 10)
        both = guard_workspace(backend, 1 << 20, quota_entries=DEFAULT_WORKSPACE_QUOTA_ENTRIES)
        assert isinstance(both, WorkspaceQuotaGuard)
        assert both.quota_entries == DEFAULT_WORKSPACE_QUOTA_ENTRIES
        assert guard_workspace(backend, None, quota_entries=None) is backend  # control
    finally:
        backend.close()
