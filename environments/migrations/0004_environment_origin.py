from django.db import migrations, models


def fill_origin(apps, schema_editor):
    """Read the origin of every recorded build from its yield, as new builds write it."""
    from environments.build_yield import origin_of

    Environment = apps.get_model("environments", "Environment")
    for environment in Environment.objects.only("id", "build_yield").iterator(chunk_size=500):
        origin = origin_of(environment.build_yield or {})
        if origin != "unrecorded":
            Environment.objects.filter(pk=environment.pk).update(origin=origin)


class Migration(migrations.Migration):
    dependencies = [
        ("environments", "0003_environment_build_yield"),
    ]

    operations = [
        migrations.AddField(
            model_name="environment",
            name="origin",
            field=models.CharField(
                blank=True,
                db_index=True,
                help_text="Where the build started (environments.build_yield.origin_of): built-in "
                "source, upload, theme (openapi), theme (mcp), complexified; a column so the "
                "catalogue filters on it at catalogue size",
                max_length=40,
            ),
        ),
        migrations.RunPython(fill_origin, migrations.RunPython.noop),
    ]
