"""``sandboxing.workspace_quota``: a size, or null to switch the quota off; nothing else."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from common.config.sandbox import DEFAULT_WORKSPACE_QUOTA, SandboxingConfig
from tools_app.quota.guard import WorkspaceQuotaGuard, guard_workspace
from tools_app.sandbox.backends.subprocess import SubprocessSandbox


def test_the_quota_is_on_by_default_and_takes_sizes() -> None:
    assert SandboxingConfig().workspace_quota == DEFAULT_WORKSPACE_QUOTA
    assert SandboxingConfig.model_validate({"workspace_quota": "1m"}).workspace_quota == 1 << 20
    assert SandboxingConfig.model_validate({"workspace_quota": None}).workspace_quota is None


@pytest.mark.parametrize("value", ["-1", "0", "lots", True])
def test_a_quota_that_is_not_a_size_is_refused_at_load(value: object) -> None:
    with pytest.raises(ValidationError) as refused:
        SandboxingConfig.model_validate({"workspace_quota": value})
    assert "workspace_quota" in str(refused.value)


def test_the_guard_wraps_only_when_a_quota_is_set() -> None:
    backend = SubprocessSandbox()
    try:
        assert guard_workspace(backend, None, quota_entries=None) is backend
        guarded = guard_workspace(backend, 1 << 20)
        assert isinstance(guarded, WorkspaceQuotaGuard)
        assert (guarded.name, guarded.isolates_network) == (backend.name, backend.isolates_network)
    finally:
        backend.close()
