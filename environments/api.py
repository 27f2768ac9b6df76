"""REST API for the taxonomy, themes, environments and tools."""

from __future__ import annotations

from django.db import transaction
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from aw_site.jobs import enqueue
from aw_site.jobs_api import JobSerializer
from aw_site.roles import ADMIN, REVIEWER
from environments.models import Category, Environment, Theme, Tool


class CategorySerializer(serializers.ModelSerializer):
    path = serializers.CharField(read_only=True)

    class Meta:
        model = Category
        fields = ["id", "name", "slug", "level", "parent", "path", "description"]


class ThemeSerializer(serializers.ModelSerializer):
    class Meta:
        model = Theme
        fields = [
            "id",
            "name",
            "title",
            "description",
            "source_kind",
            "raw_spec",
            "provenance",
            "category",
            "duplicate_of",
            "created_at",
        ]
        read_only_fields = ["category", "duplicate_of", "created_at"]


class ToolSerializer(serializers.ModelSerializer):
    environment_name = serializers.CharField(source="environment.name", read_only=True)

    class Meta:
        model = Tool
        fields = [
            "id",
            "environment",
            "environment_name",
            "name",
            "description",
            "kind",
            "origin",
            "schema",
            "source",
            "verified",
            "test_accuracy",
            "verification",
        ]
        read_only_fields = fields


class EnvironmentSerializer(serializers.ModelSerializer):
    category_path = serializers.CharField(source="category.path", read_only=True, default="")

    class Meta:
        model = Environment
        fields = [
            "id",
            "name",
            "version",
            "title",
            "description",
            "theme",
            "category",
            "category_path",
            "status",
            "parent",
            "content_hash",
            "tool_count",
            "task_count",
            "table_count",
            "row_count",
            "failure_reason",
            "created_at",
            "verified_at",
        ]
        read_only_fields = fields


class EnvironmentDetailSerializer(EnvironmentSerializer):
    class Meta(EnvironmentSerializer.Meta):
        fields = EnvironmentSerializer.Meta.fields + [
            "manifest",
            "provenance",
            "verification_report",
            "task_audit",
            "package_path",
        ]
        read_only_fields = fields


class CategoryViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Category.objects.select_related("parent__parent")
    serializer_class = CategorySerializer
    filterset_fields = ["level", "parent"]
    search_fields = ["name"]


class ThemeViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Themes; reviewers add one by hand or import many (a job)."""

    queryset = Theme.objects.select_related("category")
    serializer_class = ThemeSerializer
    filterset_fields = ["source_kind", "category"]
    search_fields = ["name", "title", "description"]

    def perform_create(self, serializer):
        serializer.save(created_by=self.request.user)

    @action(detail=False, methods=["post"], url_path="import")
    def import_themes(self, request):
        payload = ThemeImportSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        with transaction.atomic():
            job = enqueue(
                "environments.import_themes",
                payload.validated_data,
                user=request.user,
                target="themes",
            )
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ThemeImportSerializer(serializers.Serializer):
    source_kind = serializers.ChoiceField(
        choices=["mcp_spec", "tool_doc", "prd", "auto"], default="auto"
    )
    documents = serializers.ListField(
        child=serializers.JSONField(), required=False, max_length=5000
    )
    mcp_command = serializers.CharField(required=False, max_length=500)
    mcp_url = serializers.URLField(required=False)

    def validate(self, attrs):
        if not any(attrs.get(k) for k in ("documents", "mcp_command", "mcp_url")):
            raise serializers.ValidationError("give documents, an mcp_command or an mcp_url")
        return attrs


class BuildEnvironmentsSerializer(serializers.Serializer):
    sources = serializers.ListField(
        child=serializers.CharField(max_length=120), required=False, max_length=200
    )
    workers = serializers.IntegerField(min_value=1, max_value=64, default=2)


class EnvironmentViewSet(viewsets.ReadOnlyModelViewSet):
    """Environment versions. Admins retire; reviewers start catalogue builds."""

    queryset = Environment.objects.select_related("category__parent__parent")
    filterset_fields = {
        "status": ["exact"],
        "category": ["exact"],
        "name": ["exact"],
        "tool_count": ["gte", "lte"],
        "task_count": ["gte", "lte"],
    }
    search_fields = ["name", "title", "description"]
    ordering_fields = ["name", "created_at", "tool_count", "task_count"]
    required_roles = {"retire": ADMIN, "build": REVIEWER}

    def get_serializer_class(self):
        return EnvironmentDetailSerializer if self.action == "retrieve" else EnvironmentSerializer

    @action(detail=True, methods=["post"])
    def retire(self, request, pk=None):
        environment = self.get_object()
        if environment.status != Environment.Status.VERIFIED:
            raise serializers.ValidationError(
                {
                    "status": f"{environment} is {environment.status}; only verified environments are retired"
                }
            )
        environment.transition(Environment.Status.RETIRED)
        return Response(EnvironmentSerializer(environment).data)

    @action(detail=False, methods=["post"])
    def build(self, request):
        payload = BuildEnvironmentsSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        with transaction.atomic():
            job = enqueue(
                "environments.build_catalogue",
                payload.validated_data,
                user=request.user,
                target="catalogue",
            )
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ToolViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Tool.objects.select_related("environment")
    serializer_class = ToolSerializer
    filterset_fields = ["environment", "kind", "origin", "verified"]
    search_fields = ["name", "description"]


def register(router) -> None:
    router.register("categories", CategoryViewSet, basename="category")
    router.register("themes", ThemeViewSet, basename="theme")
    router.register("environments", EnvironmentViewSet, basename="environment")
    router.register("tools", ToolViewSet, basename="tool")
