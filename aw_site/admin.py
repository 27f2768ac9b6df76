from django.contrib import admin

from aw_site.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "queue", "state", "progress", "attempts", "worker", "created_at")
    list_filter = ("state", "queue", "kind")
    search_fields = ("kind", "target", "message")
    readonly_fields = ("log_tail", "error", "result", "arguments")
