"""REST API for policies, training runs with their metrics, and trajectories."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Prefetch
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from environments.models import Environment
from training.models import (
    Checkpoint,
    Policy,
    TrainingMetric,
    TrainingRun,
    TrainingTask,
)
from training.service import ensure_env_policy


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
            "serves_checkpoint",
            "parent",
            "description",
            "config",
            "created_at",
        ]
        read_only_fields = ["version", "checkpoint_path", "parent", "created_at"]
        # The version is the next free one (create()); a second policy of a name is its next
        # version, not a uniqueness error.
        validators: list = []

    def validate_serves_checkpoint(self, value: str) -> str:
        value = value.strip()
        if any(ch.isspace() for ch in value):
            raise serializers.ValidationError(
                "a Hugging Face hub id (org/name) or a local directory, without spaces"
            )
        return value

    def validate(self, attrs):
        return validate_policy_fields(attrs)

    def create(self, validated_data):
        for _attempt in range(3):  # two registrations of one name may race for the version
            latest = Policy.objects.filter(name=validated_data["name"]).order_by("-version").first()
            validated_data["version"] = (latest.version + 1) if latest else 1
            try:
                with transaction.atomic():
                    return super().create(dict(validated_data))
            except IntegrityError:
                continue
        raise serializers.ValidationError({"name": "could not allocate a version; try again"})


def validate_policy_fields(attrs: dict) -> dict:
    """The rules a new policy follows, from the API and the console form alike."""
    if attrs.get("kind") == Policy.Kind.OPENAI and not attrs.get("base_url"):
        raise serializers.ValidationError(
            {"base_url": "an OpenAI-compatible policy needs a base_url"}
        )
    if attrs.get("serves_checkpoint") and attrs.get("kind") != Policy.Kind.OPENAI:
        raise serializers.ValidationError(
            {"serves_checkpoint": "only an endpoint (openai) policy serves a checkpoint"}
        )
    if attrs.get("kind") == Policy.Kind.FAULT_INJECTION:
        from pydantic import ValidationError

        from training.policies.fault_injection import FaultConfig

        config = attrs.get("config") or {}
        if not isinstance(config, dict):
            raise serializers.ValidationError({"config": "must be a JSON object"})
        try:  # strict: "7" or true is no seed (the console form converts its text first)
            attrs["config"] = FaultConfig.model_validate(config, strict=True).model_dump()
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
            )
            raise serializers.ValidationError({"config": problems}) from exc
    elif attrs.get("config"):
        raise serializers.ValidationError(
            {"config": "only a fault-injection policy takes a config"}
        )
    return attrs


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
        """The run's options, checked field by field (``training.run_options.RunOptions``)."""
        from training.run_options import RunOptions, ValidationError, option_errors

        if not isinstance(value, dict):
            raise serializers.ValidationError("config must be a JSON object")
        try:
            RunOptions.model_validate(value)
        except ValidationError as exc:
            raise serializers.ValidationError(option_errors(exc)) from exc
        return value


class TrainingTaskSerializer(serializers.ModelSerializer):
    """One task of a run's training set and its source (the proposal that created it)."""

    environment = serializers.CharField(source="task.environment.name")
    environment_version = serializers.IntegerField(source="task.environment.version")
    kind = serializers.CharField(source="task.kind")
    tier = serializers.CharField(source="task.tier")

    class Meta:
        model = TrainingTask
        fields = [
            "task",
            "environment",
            "environment_version",
            "kind",
            "tier",
            "source",
            "proposal",
        ]


class PolicyViewSet(viewsets.ModelViewSet):
    """Policies; the endpoint policy of the AW_POLICY_* variables is registered on listing."""

    queryset = Policy.objects.all()
    serializer_class = PolicySerializer
    filterset_fields = ["name", "kind"]
    search_fields = ["name", "model_name", "description"]
    http_method_names = ["get", "post", "head", "options"]

    def list(self, request, *args, **kwargs):
        ensure_env_policy()
        return super().list(request, *args, **kwargs)


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
        from training.service import UntrainablePolicy, start_training_run

        data = serializer.validated_data
        try:
            run = start_training_run(
                request.user,
                data["base_policy"],
                data.get("environments") or [],
                data.get("config") or {},
            )
        except UntrainablePolicy as exc:
            raise serializers.ValidationError({"base_policy": str(exc)}) from exc
        except ValueError as exc:
            raise serializers.ValidationError({"environments": str(exc)}) from exc
        return Response(self.get_serializer(run).data, status=status.HTTP_202_ACCEPTED)

    @action(detail=True, methods=["get"])
    def metrics(self, request, pk=None):
        run = self.get_object()
        return Response(TrainingMetricSerializer(run.metrics.all(), many=True).data)

    def retrieve(self, request, *args, **kwargs):
        """One run, with a summary of its training set (the tasks: ``tasks/``)."""
        from training.training_set import training_set_summary

        response = super().retrieve(request, *args, **kwargs)
        response.data["training_set"] = training_set_summary(self.get_object()).to_dict()
        return response

    @action(detail=True, methods=["get"])
    def tasks(self, request, pk=None):
        """The run's training set: a summary (per source, proposal, environment, kind) and the
        listed tasks, a page at a time (``?page=N``), each with where it came from."""
        from training.training_set import training_set_summary

        run = self.get_object()
        links = TrainingTask.objects.filter(run=run).select_related("task__environment")
        page = self.paginate_queryset(links)
        rows = TrainingTaskSerializer(page, many=True).data
        response = self.get_paginated_response(rows)
        response.data["summary"] = training_set_summary(run).to_dict()
        return response


def register(router) -> None:
    router.register("policies", PolicyViewSet, basename="policy")
    router.register("training-runs", TrainingRunViewSet, basename="trainingrun")
