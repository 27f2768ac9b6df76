"""The trajectory API (/api/trajectories/): every recorded episode, filterable by the arena's
failure labels and rounds, which is why it lives in arena (the top layer) rather than in training,
where trajectories are stored. Viewers of evaluation tasks see the reward's scores without
reasons and the run with its task's gold values masked (``training.trajectory_privacy``).
"""

from __future__ import annotations

import django_filters
from django.db.models import Exists, F, OuterRef
from rest_framework import serializers, viewsets

from arena.models import ArenaEvaluation, FailureLabel
from tasks.privacy import hides_answers, public_reward, request_user
from training.models import Step, Trajectory
from training.trajectory_comparison import comparison_for
from training.trajectory_privacy import redact_steps, redacted_fields, redaction_for


class StepSerializer(serializers.ModelSerializer):
    class Meta:
        model = Step
        fields = [
            "index",
            "role",
            "content",
            "tool_name",
            "tool_arguments",
            "raw_tool_call",
            "tool_result",
            "error",
            "error_kind",
            "state_diff",
            "duration_ms",
            "tokens",
        ]


class TrajectorySerializer(serializers.ModelSerializer):
    """A trajectory; on evaluation tasks a viewer gets the reward's scores without reasons and
    the run with its task's gold values masked (``training.trajectory_privacy``)."""

    labels = serializers.SerializerMethodField()

    class Meta:
        model = Trajectory
        fields = [
            "id",
            "task",
            "environment",
            "policy",
            "training_run",
            "final_answer",
            "final_state_hash",
            "finished_reason",
            "reward",
            "total_reward",
            "success",
            "step_count",
            "tokens",
            "duration_ms",
            "metadata",
            "created_at",
            "labels",
        ]

    def get_labels(self, obj) -> list[str]:
        return sorted({label.label for label in obj.failure_labels.all()})

    def to_representation(self, instance):
        data = super().to_representation(instance)
        split = getattr(instance, "task_split", None) or instance.task.split
        if hides_answers(request_user(self.context), split):
            data["reward"] = public_reward(instance.reward)
            redaction = redaction_for(request_user(self.context), instance)
            data.update(redacted_fields(redaction, instance))
            if "steps" in data:
                steps = sorted(instance.steps.all(), key=lambda step: step.index)
                data["steps"] = StepSerializer(redact_steps(redaction, steps), many=True).data
        return data


class TrajectoryDetailSerializer(TrajectorySerializer):
    """With its steps and the step-by-step comparison with the gold run (verdicts only for a
    viewer of an evaluation task)."""

    steps = StepSerializer(many=True, read_only=True)
    step_comparison = serializers.SerializerMethodField()

    class Meta(TrajectorySerializer.Meta):
        fields = TrajectorySerializer.Meta.fields + ["state_diff", "steps", "step_comparison"]

    def get_step_comparison(self, obj) -> dict:
        steps = sorted(obj.steps.all(), key=lambda step: step.index)
        return comparison_for(request_user(self.context), obj, steps)


class TrajectoryFilter(django_filters.FilterSet):
    """Filters on many-valued relations use EXISTS, so the list never needs DISTINCT."""

    failure_labels__label = django_filters.CharFilter(method="filter_label")
    evaluations__round__number = django_filters.NumberFilter(method="filter_round")

    class Meta:
        model = Trajectory
        fields = ["environment", "policy", "task", "success", "finished_reason"]

    def filter_label(self, queryset, name, value):
        labels = FailureLabel.objects
        return queryset.filter(Exists(labels.filter(trajectory=OuterRef("pk"), label=value)))

    def filter_round(self, queryset, name, value):
        links = ArenaEvaluation.trajectories.through.objects
        return queryset.filter(
            Exists(links.filter(trajectory_id=OuterRef("pk"), arenaevaluation__round__number=value))
        )


class TrajectoryViewSet(viewsets.ReadOnlyModelViewSet):
    # The serializer shows task, environment and policy as ids; the task (its split and gold
    # values) and the policy's kind decide what a viewer sees, in the same query.
    queryset = (
        Trajectory.objects.select_related("task", "policy")
        .prefetch_related("failure_labels")
        .annotate(task_split=F("task__split"))
    )
    filterset_class = TrajectoryFilter
    ordering_fields = ["created_at", "total_reward"]

    def get_serializer_class(self):
        return TrajectoryDetailSerializer if self.action == "retrieve" else TrajectorySerializer

    def get_queryset(self):
        queryset = super().get_queryset()
        if self.action == "retrieve":
            queryset = queryset.prefetch_related("steps")
        return queryset


def register(router) -> None:
    router.register("trajectories", TrajectoryViewSet, basename="trajectory")
