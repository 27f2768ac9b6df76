"""REST API: catalogue runs and their ledger (read-only). GET /api/catalogue-runs/{id}/ is the
run's status (built, rejected by reason, remaining); /items/ its documents, ?state= filters."""

from __future__ import annotations

from rest_framework import serializers, viewsets
from rest_framework.decorators import action

from environments.directory.ledger import run_summary
from environments.models import CatalogueItem, CatalogueRun


class CatalogueItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = CatalogueItem
        fields = ["id", "run", "key", "sha256", "state", "reason", "reason_kind", "category",
                  "themes", "environments", "verified_tools", "document", "part", "parts", "job",
                  "seconds", "started_at", "finished_at"]  # fmt: skip


class CatalogueRunSerializer(serializers.ModelSerializer):
    summary = serializers.SerializerMethodField()

    class Meta:
        model = CatalogueRun
        fields = ["id", "source", "selection", "tasks_per_environment", "job", "created_at",
                  "summary"]  # fmt: skip

    def get_summary(self, run: CatalogueRun) -> dict:
        return run_summary(run).as_dict()


class CatalogueRunViewSet(viewsets.ReadOnlyModelViewSet):
    """Runs of `manage.py build_catalogue`, newest first, each with its summary."""

    queryset = CatalogueRun.objects.all()
    serializer_class = CatalogueRunSerializer

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
