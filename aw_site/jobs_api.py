"""REST API for jobs: list, read, and start the jobs that any app registers."""

from __future__ import annotations

from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from aw_site.models import Job


class JobSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    duration_seconds = serializers.FloatField(read_only=True)

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "queue",
            "state",
            "progress",
            "message",
            "log_tail",
            "error",
            "arguments",
            "result",
            "worker",
            "attempts",
            "target",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
            "heartbeat_at",
            "duration_seconds",
        ]
        read_only_fields = fields


class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Every job with its progress and log tail; reviewers may retry a failed one."""

    queryset = Job.objects.select_related("created_by")
    serializer_class = JobSerializer
    filterset_fields = ["kind", "state", "queue"]
    search_fields = ["kind", "target", "message"]
    ordering_fields = ["created_at", "progress"]

    @action(detail=True, methods=["post"])
    def retry(self, request, pk=None):
        from aw_site.jobs import enqueue

        job = self.get_object()
        if job.state != Job.State.FAILED:
            raise serializers.ValidationError(
                {"detail": f"job {job.pk} is {job.state}; only failed jobs are retried"}
            )
        new_job = enqueue(job.kind, job.arguments, user=request.user, target=job.target)
        return Response(JobSerializer(new_job).data, status=201)
