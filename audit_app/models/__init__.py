from audit_app.models.event import ActorType, AuditEvent
from audit_app.models.subject import AuditSubject
from audit_app.models.verification import AuditVerification, VerificationStatus

__all__ = ["ActorType", "AuditEvent", "AuditSubject", "AuditVerification", "VerificationStatus"]
