"""The upstream tools a process may offer: the bridge's records, merged into the catalog.

Web nodes and workers read the same rows (the database is the place every node shares);
each process keeps its copy for ``SYNTHORG_BRIDGE_CATALOG_TTL_SECONDS``. Only records
with an admitted contract enter the catalog; an unavailable one stays in it so a call is
refused with the reason (``BridgedTool.preflight``) rather than the tool going missing.
So does a held or rejected one; agents' listings leave it out
(``selectors.unlisted_upstream_tools``), since only a pinned definition is shown.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import structlog
from django.conf import settings

from tools_app.bridge.tool import BridgedTool, ToolRecord
from tools_app.contracts import ContractError, ToolContract, ToolRegistry
from trust_app.policy import name_key

log = structlog.get_logger("synthorg.bridge")

_lock = threading.Lock()
_rows: dict[str, Any] = {"at": -1.0, "records": ()}
_merged: dict[str, Any] = {"key": None, "catalog": None}


def _read_records() -> tuple[ToolRecord, ...]:
    from tools_app.models import UpstreamToolRecord

    rows = UpstreamToolRecord.objects.exclude(contract=None).order_by("name")
    return tuple(
        ToolRecord(
            name=row.name,
            server=row.server,
            upstream_name=row.upstream_name,
            upstream_hash=row.upstream_hash,
            server_identity=row.server_identity,
            contract=row.contract,
        )
        for row in rows
    )


def bridged_records() -> tuple[ToolRecord, ...]:
    """The recorded upstream tools with a contract, at most a TTL old."""
    now = time.monotonic()
    with _lock:
        if now - _rows["at"] < settings.SYNTHORG_BRIDGE_CATALOG_TTL_SECONDS:
            return tuple(_rows["records"])
    try:
        records = _read_records()
    except Exception as exc:  # no database yet (start, checks): no upstream tools
        log.debug("bridge_records_unreadable", error=str(exc))
        return ()
    with _lock:
        _rows.update(at=now, records=records)
    return records


def forget_records() -> None:
    """Read the records again on the next use (after this process wrote them)."""
    with _lock:
        _rows["at"] = -1.0


def with_bridged(base: Any) -> Any:
    """``base`` (a ToolCatalog of built-ins) plus the recorded upstream tools."""
    records = bridged_records()
    if not records:
        return base
    key = (id(base), records)
    with _lock:
        if _merged["key"] == key:
            return _merged["catalog"]
    catalog = _merge(base, records)
    with _lock:
        _merged.update(key=key, catalog=catalog)
    return catalog


def _merge(base: Any, records: tuple[ToolRecord, ...]) -> Any:
    registry = ToolRegistry(action_types=base.action_types)
    for contract in base:
        registry.register(contract)
    implementations = dict(base.implementations)
    for record in records:
        try:
            contract = registry.register(ToolContract.model_validate(record.contract))
        except (ContractError, ValueError) as exc:
            # Admitted at discovery, refused here (another process's rules differ): left out.
            log.warning("bridged_contract_refused", tool=record.name, error=str(exc))
            continue
        implementations[name_key(contract.name)] = BridgedTool(contract=contract, record=record)
    return type(base)(
        registry=registry, implementations=implementations, action_types=base.action_types
    )
