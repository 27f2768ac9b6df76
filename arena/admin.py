from django.contrib import admin

from arena.models import (
    ArenaEvaluation,
    DiagnosisReport,
    EvolutionRound,
    ExpansionProposal,
    FailureLabel,
)


@admin.register(EvolutionRound)
class EvolutionRoundAdmin(admin.ModelAdmin):
    list_display = ("number", "status", "policy", "auto_approve", "created_at")
    list_filter = ("status",)


@admin.register(ExpansionProposal)
class ExpansionProposalAdmin(admin.ModelAdmin):
    list_display = ("id", "round", "kind", "environment", "status", "reviewer")
    list_filter = ("status", "kind")


admin.site.register(ArenaEvaluation)
admin.site.register(DiagnosisReport)
admin.site.register(FailureLabel)
