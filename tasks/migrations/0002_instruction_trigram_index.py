"""Substring search over task instructions: a trigram index on PostgreSQL (no-op elsewhere)."""

from django.db import migrations


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS task_instruction_trgm ON tasks_task "
        "USING gin (UPPER(instruction) gin_trgm_ops)"
    )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS task_instruction_trgm")


class Migration(migrations.Migration):
    dependencies = [("tasks", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
