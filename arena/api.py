"""REST API for evolution rounds, evaluations, diagnoses and expansion proposals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from arena.models import ArenaEvaluation, DiagnosisReport, EvolutionRound, ExpansionProposal
from arena.report_privacy import public_report_analyses
from arena.round_config import RoundConfig, round_config_errors
from arena.round_config import ValidationError as ConfigError
from arena.rounds import MAX_SEED
from aw_site.roles import REVIEWER
from tasks.privacy import may_see_answers, public_evidence, request_user
from training.models import Policy


class EvolutionRoundSerializer(serializers.ModelSerializer):
    current_job_progress = serializers.FloatField(
        source="current_job.progress", read_only=True, default=None
    )

    class Meta:
        model = EvolutionRound
        fields = [
            "id",
            "number",
            "status",
            "failure_reason",
            "auto_approve",
            "policy",
            "trained_policy",
            "training_run",
            "config",
            "seed",
            "scores",
            "current_job",
            "current_job_progress",
            "created_at",
            "finished_at",
        ]
        read_only_fields = [
            f for f in fields if f not in ("auto_approve", "policy", "config", "seed")
        ]


class StartRoundSerializer(serializers.Serializer):
    """Who starts a round with which policy and seed; every other key is one of the round's
    settings (``arena.round_config.RoundConfig``), refused by name when unknown or out of
    range. ``validated_data`` is ``start_round``'s keyword arguments."""

    policy = serializers.PrimaryKeyRelatedField(queryset=Policy.objects.all(), required=False)
    auto_approve = serializers.BooleanField(default=False)
    seed = serializers.IntegerField(min_value=0, max_value=MAX_SEED, required=False)

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            return super().to_internal_value(data)
        errors: dict[str, list[str]] = {}
        validated: dict[str, Any] = {}
        try:
            validated = super().to_internal_value(
                {name: value for name, value in data.items() if name in self.fields}
            )
        except serializers.ValidationError as exc:
            errors.update(exc.detail)
        options = {name: value for name, value in data.items() if name not in self.fields}
        try:
            validated.update(RoundConfig.model_validate(options).stored())
        except ConfigError as exc:
            errors.update({name: [msg] for name, msg in round_config_errors(exc).items()})
        if errors:
            raise serializers.ValidationError(errors)
        return validated


class ArenaEvaluationSerializer(serializers.ModelSerializer):
    class Meta:
        model = ArenaEvaluation
        fields = [
            "id",
            "round",
            "policy",
            "results",
            "comparison",
            "task_count",
            "success_rate",
            "mean_reward",
            "created_at",
        ]


class DiagnosisReportSerializer(serializers.ModelSerializer):
    class Meta:
        model = DiagnosisReport
        fields = ["id", "round", "evaluation", "distribution", "weakest", "analysis", "created_at"]

    def to_representation(self, instance):
        # A diagnosis is about arena tasks: viewers get the analysis without quoted gold data.
        data = super().to_representation(instance)
        if not may_see_answers(request_user(self.context)):
            known = self.context.setdefault("public_analyses", {})
            if instance.pk not in known:  # a list page is redacted at once, not row by row
                page = getattr(self.parent, "instance", None)
                reports = [instance] if page is None or isinstance(page, DiagnosisReport) else page
                known.update(public_report_analyses(reports))
            data["analysis"] = known[instance.pk]
        return data


class ExpansionProposalSerializer(serializers.ModelSerializer):
    reviewer = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = ExpansionProposal
        fields = [
            "id",
            "round",
            "report",
            "kind",
            "environment",
            "category",
            "params",
            "rationale",
            "evidence",
            "status",
            "reviewer",
            "review_note",
            "reviewed_at",
            "applied_job",
            "result",
            "created_at",
        ]
        read_only_fields = fields

    def to_representation(self, instance):
        # Evidence examples quote label explanations (answers, gold arguments): reviewers only.
        data = super().to_representation(instance)
        if not may_see_answers(request_user(self.context)):
            data["evidence"] = public_evidence(instance.evidence)
        return data


class ReviewSerializer(serializers.Serializer):
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


class EvolutionRoundViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = EvolutionRound.objects.select_related("policy", "current_job")
    serializer_class = EvolutionRoundSerializer
    lookup_field = "number"
    filterset_fields = ["status"]
    required_roles = {"start": REVIEWER, "resume": REVIEWER}

    @action(detail=False, methods=["post"])
    def start(self, request):
        from arena.rounds import start_round

        payload = StartRoundSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        evolution_round = start_round(user=request.user, **payload.validated_data)
        return Response(
            EvolutionRoundSerializer(evolution_round).data, status=status.HTTP_202_ACCEPTED
        )

    @action(detail=True, methods=["post"])
    def resume(self, request, number=None):
        from arena.rounds import resume_round

        evolution_round = resume_round(self.get_object(), user=request.user)
        return Response(
            EvolutionRoundSerializer(evolution_round).data, status=status.HTTP_202_ACCEPTED
        )


class ArenaEvaluationViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = ArenaEvaluation.objects.select_related("round")
    serializer_class = ArenaEvaluationSerializer
    filterset_fields = ["round", "policy"]

    @action(detail=True, methods=["get"])
    def calibration(self, request, pk=None):
        """Per-label precision and recall of diagnosis against the faults a fault-injection
        policy injected in this evaluation (label names and counts only: no gold data)."""
        from arena.calibration import evaluation_calibration

        return Response(evaluation_calibration(self.get_object()).to_dict())


class DiagnosisReportViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = DiagnosisReport.objects.all()
    serializer_class = DiagnosisReportSerializer
    filterset_fields = ["round"]


class ExpansionProposalViewSet(viewsets.ReadOnlyModelViewSet):
    """Proposals; only reviewers approve or reject, and only approved ones are applied."""

    queryset = ExpansionProposal.objects.select_related("reviewer")
    serializer_class = ExpansionProposalSerializer
    filterset_fields = ["round", "status", "kind", "environment"]
    required_roles = {"approve": REVIEWER, "reject": REVIEWER}

    def _review(self, request, approve: bool):
        from arena.rounds import review_proposal

        payload = ReviewSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        with transaction.atomic():
            proposal = ExpansionProposal.objects.select_for_update().get(pk=self.get_object().pk)
            review_proposal(
                proposal, request.user, approve=approve, note=payload.validated_data["note"]
            )
        return Response(self.get_serializer(proposal).data)

    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        return self._review(request, approve=True)

    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        return self._review(request, approve=False)


def register(router) -> None:
    router.register("rounds", EvolutionRoundViewSet, basename="round")
    router.register("evaluations", ArenaEvaluationViewSet, basename="evaluation")
    router.register("diagnoses", DiagnosisReportViewSet, basename="diagnosis")
    router.register("proposals", ExpansionProposalViewSet, basename="proposal")
