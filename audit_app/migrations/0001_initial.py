"""The record leaves tools_app for its own app: state only, the tables keep their names."""

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("tools_app", "0009_audit_verification_abandoned"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='AuditVerification',
                    fields=[
                        ('id', models.BigAutoField(primary_key=True, serialize=False)),
                        ('requested_by', models.CharField(max_length=150)),
                        ('requested_at', models.DateTimeField()),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('passed', 'Passed'), ('failed', 'Failed'), ('abandoned', 'Abandoned')], default='queued', max_length=10)),
                        ('total', models.BigIntegerField(default=0)),
                        ('checked', models.BigIntegerField(default=0)),
                        ('checkpoints', models.IntegerField(default=0)),
                        ('first_bad_event', models.BigIntegerField(blank=True, null=True)),
                        ('summary', models.TextField(blank=True)),
                    ],
                    options={
                        'db_table': 'tools_app_auditverification',
                        'ordering': ['-id'],
                    },
                ),
                migrations.CreateModel(
                    name='AuditEvent',
                    fields=[
                        ('id', models.BigAutoField(primary_key=True, serialize=False)),
                        ('created_at', models.DateTimeField(db_index=True, editable=False)),
                        ('kind', models.CharField(db_index=True, editable=False, max_length=64)),
                        ('actor_type', models.CharField(choices=[('agent', 'Agent'), ('person', 'Person'), ('system', 'System')], editable=False, max_length=10)),
                        ('actor_id', models.CharField(blank=True, editable=False, max_length=64)),
                        ('actor_name', models.CharField(blank=True, db_index=True, editable=False, max_length=150)),
                        ('agent_id', models.UUIDField(blank=True, db_index=True, editable=False, null=True)),
                        ('agent_name', models.CharField(blank=True, db_index=True, editable=False, max_length=100)),
                        ('invocation_id', models.UUIDField(blank=True, db_index=True, editable=False, null=True)),
                        ('tool', models.CharField(blank=True, db_index=True, editable=False, max_length=200)),
                        ('category', models.CharField(blank=True, editable=False, max_length=40)),
                        ('action_type', models.CharField(blank=True, editable=False, max_length=80)),
                        ('arguments_hash', models.CharField(blank=True, editable=False, max_length=64)),
                        ('outcome', models.CharField(blank=True, db_index=True, editable=False, max_length=40)),
                        ('status', models.CharField(blank=True, editable=False, max_length=40)),
                        ('reason', models.TextField(blank=True, editable=False)),
                        ('rule', models.CharField(blank=True, editable=False, max_length=200)),
                        ('duration_ms', models.IntegerField(blank=True, editable=False, null=True)),
                        ('request_id', models.CharField(blank=True, db_index=True, editable=False, max_length=64)),
                        ('data', models.JSONField(blank=True, default=dict, editable=False)),
                        ('prev_hash', models.CharField(editable=False, max_length=64)),
                        ('hash', models.CharField(editable=False, max_length=64, unique=True)),
                        ('key_id', models.CharField(blank=True, default='', editable=False, max_length=40)),
                    ],
                    options={
                        'db_table': 'tools_app_auditevent',
                        'ordering': ['-id'],
                        'indexes': [models.Index(fields=['agent_name', '-id'], name='tools_app_a_agent_n_1402ca_idx'), models.Index(fields=['tool', '-id'], name='tools_app_a_tool_b4ea64_idx')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
