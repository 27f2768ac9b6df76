"""REST API for policies, training runs with their metrics, and trajectories."""

from __future__ import annotations

import django_filters
from django.apps import apps
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Prefetch
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from aw_site.jobs import enqueue
from environments.models import Environment
from tasks.privacy import hides_answers, public_reward, request_user
from training.models import Checkpoint, Policy, Step, TrainingMetric, TrainingRun, Trajectory


class PolicySerializer(serializers.ModelSerializer):
    class Meta:
        model = Policy
        fields = [
            "id",
            "name",
            "version",
            "kind",
            "base_url",
            "model_name",
            "checkpoint_path",
            "parent",
            "description",
            "created_at",
        ]
        read_only_fields = ["version", "checkpoint_path", "parent", "created_at"]

    def validate(self, attrs):
        if attrs.get("kind") == Policy.Kind.OPENAI and not attrs.get("base_url"):
            raise serializers.ValidationError(
                {"base_url": "an OpenAI-compatible policy needs a base_url"}
            )
        return attrs

    def create(self, validated_data):
        latest = Policy.objects.filter(name=validated_data["name"]).order_by("-version").first()
        validated_data["version"] = (latest.version + 1) if latest else 1
        return super().create(validated_data)


class TrainingMetricSerializer(serializers.ModelSerializer):
    class Meta:
        model = TrainingMetric
        fields = ["phase", "step", "values", "created_at"]


class CheckpointSerializer(serializers.ModelSerializer):
    class Meta:
        model = Checkpoint
        fields = ["id", "policy", "run", "step", "path", "metrics", "created_at"]


class TrainingRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = TrainingRun
        fields = [
            "id",
            "base_policy",
            "output_policy",
            "config",
            "status",
            "job",
            "environments",
            "summary",
            "failure_reason",
            "round_number",
            "created_at",
            "finished_at",
        ]
        read_only_fields = [
            "output_policy",
            "status",
            "job",
            "summary",
            "failure_reason",
            "round_number",
            "created_at",
            "finished_at",
        ]

    def validate_config(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("config must be a JSON object")
        allowed = {
            "sft_epochs",
            "grpo_steps",
            "num_generations",
            "max_completion_length",
            "learning_rate",
            "tasks_per_environment",
            "seed",
            "use_vllm",
            "task_kinds",
            "exclude_uniform",
        }
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise serializers.ValidationError(
                f"unknown config keys: {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
            )
        kinds = value.get("task_kinds", ["graph"])
        if not isinstance(kinds, list) or not kinds or not set(kinds) <= {"graph", "programmatic"}:
            raise serializers.ValidationError(
                "task_kinds must be a non-empty list of graph and/or programmatic"
            )
        if not isinstance(value.get("exclude_uniform", False), bool):
            raise serializers.ValidationError("exclude_uniform must be true or false")
        return value


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
    """A trajectory; on evaluation tasks a viewer gets the reward's scores without reasons."""

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
        return data


class TrajectoryDetailSerializer(TrajectorySerializer):
    steps = StepSerializer(many=True, read_only=True)

    class Meta(TrajectorySerializer.Meta):
        fields = TrajectorySerializer.Meta.fields + ["state_diff", "steps"]


class PolicyViewSet(viewsets.ModelViewSet):
    queryset = Policy.objects.all()
    serializer_class = PolicySerializer
    filterset_fields = ["name", "kind"]
    search_fields = ["name", "model_name", "description"]
    http_method_names = ["get", "post", "head", "options"]


class TrainingRunViewSet(viewsets.ModelViewSet):
    # The serializer shows related rows as ids: fetch only the environment ids, not manifests.
    queryset = TrainingRun.objects.prefetch_related(
        Prefetch("environments", queryset=Environment.objects.only("id"))
    )
    serializer_class = TrainingRunSerializer
    filterset_fields = ["status", "base_policy", "round_number"]
    http_method_names = ["get", "post", "head", "options"]

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        environments = serializer.validated_data.get("environments") or []
        if any(env.status != Environment.Status.VERIFIED for env in environments):
            raise serializers.ValidationError(
                {"environments": "training uses verified environments only"}
            )
        with transaction.atomic():
            run = serializer.save()
            job = enqueue(
                "training.train",
                {"run": run.pk},
                user=request.user,
                target=f"training_run:{run.pk}",
            )
            run.job = job
            run.save(update_fields=["job"])
        return Response(self.get_serializer(run).data, status=status.HTTP_202_ACCEPTED)

    @action(detail=True, methods=["get"])
    def metrics(self, request, pk=None):
        run = self.get_object()
        return Response(TrainingMetricSerializer(run.metrics.all(), many=True).data)


class TrajectoryFilter(django_filters.FilterSet):
    """Filters on many-valued relations use EXISTS, so the list never needs DISTINCT."""

    failure_labels__label = django_filters.CharFilter(method="filter_label")
    evaluations__round__number = django_filters.NumberFilter(method="filter_round")

    class Meta:
        model = Trajectory
        fields = ["environment", "policy", "task", "success", "finished_reason"]

    def filter_label(self, queryset, name, value):
        labels = apps.get_model("arena", "FailureLabel").objects
        return queryset.filter(Exists(labels.filter(trajectory=OuterRef("pk"), label=value)))

    def filter_round(self, queryset, name, value):
        links = apps.get_model("arena", "ArenaEvaluation").trajectories.through.objects
        return queryset.filter(
            Exists(links.filter(trajectory_id=OuterRef("pk"), arenaevaluation__round__number=value))
        )


class TrajectoryViewSet(viewsets.ReadOnlyModelViewSet):
    # The serializer shows task, environment and policy as ids; the task's split (one join)
    # decides whether a viewer sees the reward reasons.
    queryset = Trajectory.objects.prefetch_related("failure_labels").annotate(
        task_split=F("task__split")
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
    router.register("policies", PolicyViewSet, basename="policy")
    router.register("training-runs", TrainingRunViewSet, basename="trainingrun")
    router.register("trajectories", TrajectoryViewSet, basename="trajectory")
