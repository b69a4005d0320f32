"""The record moves to audit_app: tools_app forgets its models, the tables stay."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0009_audit_verification_abandoned"),
        ("audit_app", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="AuditEvent"),
                migrations.DeleteModel(name="AuditVerification"),
            ],
            database_operations=[],
        ),
    ]
