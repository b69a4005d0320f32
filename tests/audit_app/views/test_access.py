"""Who may read the audit log: auditors and admins, on every audit page and endpoint."""

from __future__ import annotations

from tests.common.permission_suite import AUDIT_ROLES, PermissionSuite


class TestAuditListAccess(PermissionSuite):
    path = "/audit/"
    allowed = AUDIT_ROLES


class TestAuditEventAccess(PermissionSuite):
    path = "/audit/{event}/"
    allowed = AUDIT_ROLES


class TestAuditInvocationAccess(PermissionSuite):
    path = "/audit/invocations/{invocation}/"
    allowed = AUDIT_ROLES
    ok_status = 404  # the role is checked first: there is no such call


class TestAuditCsvExportAccess(PermissionSuite):
    path = "/audit/export.csv"
    allowed = AUDIT_ROLES


class TestAuditJsonlExportAccess(PermissionSuite):
    path = "/audit/export.jsonl"
    allowed = AUDIT_ROLES


class TestAuditApiAccess(PermissionSuite):
    path = "/api/v1/audit/events/"
    allowed = AUDIT_ROLES
    kind = "api"
