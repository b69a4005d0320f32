from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0012_invocation_cancel_requested"),
    ]

    operations = [
        migrations.AddField(
            model_name="invocation",
            name="purpose",
            field=models.CharField(blank=True, db_default="", default="", max_length=500),
        ),
    ]
