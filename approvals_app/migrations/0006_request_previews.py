from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("approvals_app", "0005_request_verdict"),
    ]

    operations = [
        migrations.AddField(
            model_name="approvalrequest",
            name="previews",
            field=models.JSONField(
                blank=True, db_default=models.Value([], models.JSONField()), default=list
            ),
        ),
    ]
