"""REST API for tasks and for starting task synthesis."""

from __future__ import annotations

import os

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from aw_site.jobs import enqueue
from aw_site.jobs_api import JobSerializer
from aw_site.roles import REVIEWER
from environments.models import Environment
from tasks.models import EXCLUDING_MARKS, NOTE_MAX_CHARS, Task, TaskReview
from tasks.privacy import GOLD_FIELDS, hides_answers, public_metadata, request_user
from tasks.reviews import SAMPLE_SIZE, mark_task, marks_summary, review_sample
from tasks.service import policy_exists
from tasks.synthesis.instructions import TIERS

_HIDDEN_HELP = "null for viewers on evaluation (arena, held-out) tasks: reviewers only"


class TaskSerializer(serializers.ModelSerializer):
    """A task; a viewer gets null gold fields and reduced metadata on evaluation tasks."""

    environment_name = serializers.CharField(source="environment.name", read_only=True)
    answers_hidden = serializers.SerializerMethodField(
        help_text="True when the gold fields are withheld from you (evaluation task, viewer)"
    )

    class Meta:
        model = Task
        fields = [
            "id",
            "environment",
            "environment_name",
            "kind",
            "split",
            "difficulty",
            "instruction",
            "gold_chain",
            "solution",
            "verification_script",
            "reference_answer",
            "expected_state_hash",
            "expected_diff",
            "write_steps",
            "signature",
            "seed",
            "round_number",
            "metadata",
            "answer_contract",
            "audit",
            "structure",
            "tier",
            "pass_rate",
            "consistency",
            "answers_hidden",
            "created_at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            name: {"allow_null": True, "help_text": _HIDDEN_HELP} for name in GOLD_FIELDS
        }

    def get_answers_hidden(self, obj) -> bool:
        return hides_answers(request_user(self.context), obj)

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if data["answers_hidden"]:
            data.update(dict.fromkeys(GOLD_FIELDS))
            data["metadata"] = public_metadata(instance.metadata)
        return data


class ConsistencySerializer(serializers.Serializer):
    policy = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Policy id whose rollouts measure the pass rate (default: AW_POLICY_BASE_URL)",
    )
    rollouts = serializers.IntegerField(min_value=1, max_value=64, default=4)

    def validate_policy(self, value):
        if value is not None and not policy_exists(value):
            raise serializers.ValidationError(f"no policy {value}")
        return value

    def validate(self, attrs):
        if attrs.get("policy") is None and not os.environ.get("AW_POLICY_BASE_URL"):
            raise serializers.ValidationError(
                "name a policy: no policy endpoint is configured (AW_POLICY_BASE_URL)"
            )
        return attrs


class SynthesizeTasksSerializer(serializers.Serializer):
    environment = serializers.PrimaryKeyRelatedField(queryset=Environment.objects.all())
    kind = serializers.ChoiceField(choices=Task.Kind.choices, default=Task.Kind.GRAPH)
    count = serializers.IntegerField(min_value=1, max_value=5000, default=20)
    min_walk_length = serializers.IntegerField(min_value=1, max_value=64, default=1)
    max_walk_length = serializers.IntegerField(min_value=1, max_value=64, default=4)
    write_steps = serializers.IntegerField(min_value=0, max_value=32, default=0)
    seed = serializers.IntegerField(min_value=0, default=0)
    tier = serializers.ChoiceField(
        choices=[(t, t) for t in TIERS],
        default="goal",
        help_text="Instruction tier: explicit steps, a goal, or a goal with conditions, a "
        "value to discover and a distractor",
    )
    consistency = ConsistencySerializer(
        required=False,
        help_text='Measure each task\'s pass rate over N rollouts of a policy: {"policy": id, '
        '"rollouts": N}; tasks every rollout or none solved are marked (consistency)',
    )

    def validate(self, attrs):
        if attrs["min_walk_length"] > attrs["max_walk_length"]:
            raise serializers.ValidationError("min_walk_length must not exceed max_walk_length")
        if attrs["environment"].status != Environment.Status.VERIFIED:
            raise serializers.ValidationError(
                {"environment": "tasks are synthesized only in verified environments"}
            )
        return attrs


class TaskMarkSerializer(serializers.Serializer):
    """A reviewer's mark on a task; marking again replaces the reviewer's earlier mark."""

    mark = serializers.ChoiceField(
        choices=TaskReview.Mark.choices,
        help_text="natural keeps the task; unclear, wrong_gold and meaningless take it out of "
        "training and arena sampling",
    )
    note = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=NOTE_MAX_CHARS
    )


class TaskReviewSerializer(serializers.ModelSerializer):
    reviewer = serializers.CharField(source="reviewer.get_username", read_only=True)
    excludes_task = serializers.SerializerMethodField(
        help_text="True when this mark takes the task out of training and arena sampling"
    )

    class Meta:
        model = TaskReview
        fields = [
            "id",
            "task",
            "reviewer",
            "mark",
            "note",
            "template",
            "intent",
            "excludes_task",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_excludes_task(self, obj) -> bool:
        return obj.mark in EXCLUDING_MARKS


class MarksQuerySerializer(serializers.Serializer):
    environment = serializers.PrimaryKeyRelatedField(
        queryset=Environment.objects.all(), required=False, allow_null=True
    )


class ReviewSampleQuerySerializer(MarksQuerySerializer):
    seed = serializers.IntegerField(min_value=0, default=0)
    size = serializers.IntegerField(min_value=1, max_value=100, default=SAMPLE_SIZE)


class TaskViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Task.objects.select_related("environment")
    serializer_class = TaskSerializer
    filterset_fields = [
        "environment",
        "kind",
        "split",
        "difficulty",
        "round_number",
        "tier",
        "consistency",
    ]
    search_fields = ["instruction"]
    ordering_fields = ["id", "difficulty", "created_at"]
    required_roles = {"mark": REVIEWER}

    @action(detail=True, methods=["post"], serializer_class=TaskMarkSerializer)
    def mark(self, request, pk=None):
        """Mark the task natural, unclear, wrong_gold or meaningless (reviewers and admins);
        any mark but natural takes it out of training and arena sampling."""
        task = self.get_object()
        payload = TaskMarkSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            review = mark_task(task, request.user, **payload.validated_data)
        except DjangoValidationError as exc:
            raise serializers.ValidationError({"mark": exc.messages}) from exc
        return Response(TaskReviewSerializer(review).data, status=status.HTTP_200_OK)

    @action(detail=False, methods=["get"], url_path="review-sample")
    def review_sample(self, request):
        """The review queue: a seeded sample of the newest tasks no reviewer has marked, newest
        first, from each environment in turn (``environment``, ``seed``, ``size`` <= 100)."""
        query = ReviewSampleQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        sample = review_sample(**query.validated_data)
        return Response(TaskSerializer(sample, many=True, context={"request": request}).data)

    @action(detail=False, methods=["get"], url_path="review-marks")
    def review_marks(self, request):
        """Reviewers' marks counted per synthesis template and per intent, the generators with
        the largest share of marks other than natural first (``environment`` to narrow)."""
        query = MarksQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(marks_summary(query.validated_data.get("environment")).to_dict())

    @action(detail=False, methods=["post"])
    def synthesize(self, request):
        payload = SynthesizeTasksSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        arguments = {
            **payload.validated_data,
            "environment": payload.validated_data["environment"].pk,
        }
        with transaction.atomic():
            job = enqueue(
                "tasks.synthesize",
                arguments,
                user=request.user,
                target=f"environment:{arguments['environment']}",
            )
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


def register(router) -> None:
    router.register("tasks", TaskViewSet, basename="task")
