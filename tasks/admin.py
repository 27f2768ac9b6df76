from django.contrib import admin

from tasks.models import Task


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "environment",
        "kind",
        "split",
        "difficulty",
        "write_steps",
        "round_number",
    )
    list_filter = ("kind", "split", "difficulty")
    search_fields = ("instruction",)
    raw_id_fields = ("environment",)
