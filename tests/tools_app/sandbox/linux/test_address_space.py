"""The address-space ceiling a browser asks for is granted only where a memory cgroup
bounds what the call really uses; without one, memory stays the only ceiling."""

from __future__ import annotations

import resource

import pytest

from tools_app.sandbox.errors import SandboxSpecInvalidError
from tools_app.sandbox.linux.limits import ADDRESS_SPACE_HEADROOM_WITH_CGROUP, rlimits_for
from tools_app.sandbox.protocol import MIB, Limits


def _address_space(limits: Limits, *, cgroup: bool) -> int:
    found = dict(rlimits_for(limits, cgroup_enforces_memory=cgroup))
    soft, hard = found[resource.RLIMIT_AS]
    assert soft == hard
    return soft


def test_a_wide_address_space_needs_a_memory_cgroup() -> None:
    wide = Limits(memory_bytes=512 * MIB, address_space_bytes=1 << 40)
    assert _address_space(wide, cgroup=True) == 1 << 40
    # Without the cgroup the address space is the only memory bound: it stays at memory.
    assert _address_space(wide, cgroup=False) == 512 * MIB


def test_without_the_setting_the_ceilings_are_unchanged() -> None:
    plain = Limits(memory_bytes=512 * MIB)
    assert _address_space(plain, cgroup=True) == 512 * MIB * ADDRESS_SPACE_HEADROOM_WITH_CGROUP
    assert _address_space(plain, cgroup=False) == 512 * MIB


def test_an_address_space_below_memory_is_refused() -> None:
    with pytest.raises(SandboxSpecInvalidError):
        Limits(memory_bytes=512 * MIB, address_space_bytes=256 * MIB)
    # Control: one of at least memory_bytes is accepted.
    assert Limits(memory_bytes=512 * MIB, address_space_bytes=512 * MIB).address_space_bytes
