from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("approvals_app", "0003_grants_expiry_escalation"),
    ]

    operations = [
        migrations.AddField(
            model_name="approvalrequest",
            name="risk_reasons",
            field=models.JSONField(
                blank=True, db_default=models.Value([], models.JSONField()), default=list
            ),
        ),
    ]
