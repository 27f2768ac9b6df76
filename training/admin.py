from django.contrib import admin

from training.models import Checkpoint, Policy, Step, TrainingMetric, TrainingRun, Trajectory


@admin.register(Policy)
class PolicyAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "kind", "model_name", "created_at")
    list_filter = ("kind",)


@admin.register(TrainingRun)
class TrainingRunAdmin(admin.ModelAdmin):
    list_display = ("id", "base_policy", "output_policy", "status", "created_at")
    list_filter = ("status",)


admin.site.register(TrainingMetric)
admin.site.register(Checkpoint)


class StepInline(admin.TabularInline):
    model = Step
    extra = 0
    fields = ("index", "role", "tool_name", "error_kind")


@admin.register(Trajectory)
class TrajectoryAdmin(admin.ModelAdmin):
    list_display = ("id", "environment", "policy", "success", "total_reward", "finished_reason")
    list_filter = ("success", "finished_reason")
    raw_id_fields = ("task", "environment", "policy", "training_run")
    inlines = [StepInline]
