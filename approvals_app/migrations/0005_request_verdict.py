from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("approvals_app", "0004_risk_reasons"),
    ]

    operations = [
        migrations.AddField(
            model_name="approvalrequest",
            name="verdict",
            field=models.CharField(
                blank=True,
                choices=[("no_ask", "No Ask"), ("withdrawn", "Withdrawn")],
                db_default="",
                default="",
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="approvalrequest",
            name="verdict_reason",
            field=models.TextField(blank=True, db_default="", default=""),
        ),
        migrations.AddField(
            model_name="approvalrequest",
            name="verdict_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
