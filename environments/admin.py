from django.contrib import admin

from environments.models import Category, Environment, Theme, Tool, ToolTest


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ("name", "level", "parent")
    list_filter = ("level",)
    search_fields = ("name",)


@admin.register(Theme)
class ThemeAdmin(admin.ModelAdmin):
    list_display = ("name", "source_kind", "category", "created_at")
    list_filter = ("source_kind",)
    search_fields = ("name", "title", "description")


class ToolInline(admin.TabularInline):
    model = Tool
    fields = ("name", "kind", "origin", "verified", "test_accuracy")
    extra = 0
    show_change_link = True


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "status", "category", "tool_count", "task_count")
    list_filter = ("status",)
    search_fields = ("name", "title", "description")
    inlines = [ToolInline]


@admin.register(Tool)
class ToolAdmin(admin.ModelAdmin):
    list_display = ("name", "environment", "kind", "origin", "verified", "test_accuracy")
    list_filter = ("kind", "origin", "verified")
    search_fields = ("name", "description")


@admin.register(ToolTest)
class ToolTestAdmin(admin.ModelAdmin):
    list_display = ("name", "tool", "passed")
