from django.contrib import admin

from tasks.models import Task, TaskReview


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


@admin.register(TaskReview)
class TaskReviewAdmin(admin.ModelAdmin):
    list_display = ("id", "task", "reviewer", "mark", "template", "intent", "updated_at")
    list_filter = ("mark", "intent")
    search_fields = ("note", "template")
    raw_id_fields = ("task", "reviewer")
