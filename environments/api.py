"""REST API for the taxonomy, themes, environments and tools."""

from __future__ import annotations

from django.db import transaction
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from aw_site.jobs import enqueue
from aw_site.jobs_api import JobSerializer
from aw_site.parsers import SafeJSONParser
from aw_site.roles import ADMIN, REVIEWER
from environments.builder import submit
from environments.builder.dispatch import (
    ReleaseUpload,
    queue_release,
    queue_submission,
    request_from_submission,
    theme_request_from_submission,
)
from environments.builder.request import BuildRequestError
from environments.models import Category, Environment, Theme, Tool
from environments.versions import with_superseded


class CategorySerializer(serializers.ModelSerializer):
    path = serializers.CharField(read_only=True)

    class Meta:
        model = Category
        fields = ["id", "name", "slug", "level", "parent", "path", "description"]


class ThemeSerializer(serializers.ModelSerializer):
    tool_names = serializers.SerializerMethodField()
    environments = serializers.SerializerMethodField()

    def get_tool_names(self, theme) -> list[str]:
        from environments.builder.theme_reading import theme_tools
        from environments.themes_import import theme_dict

        return [t.get("name", "") for t in theme_tools(theme_dict(theme))]

    def get_environments(self, theme) -> list[dict]:
        return [
            {"id": e.pk, "name": e.name, "version": e.version, "status": e.status}
            for e in theme.environments.all()
        ]

    class Meta:
        model = Theme
        fields = [
            "tool_names",
            "environments",
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
        read_only_fields = ["category", "duplicate_of", "created_at", "tool_names", "environments"]


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
    superseded = serializers.BooleanField(
        read_only=True,
        default=False,
        help_text="A newer verified version exists: rounds and training use that one",
    )

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
            "origin",
            "parent",
            "superseded",
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
    yield_funnel = serializers.SerializerMethodField(
        help_text="What survived each step of the build: theme tools -> schema entities -> tools "
        "implemented -> tools verified -> tasks synthesized"
    )

    def get_yield_funnel(self, environment) -> dict:
        from environments.build_yield import funnel_of

        return funnel_of(environment)

    class Meta(EnvironmentSerializer.Meta):
        fields = EnvironmentSerializer.Meta.fields + [
            "yield_funnel",
            "manifest",
            "provenance",
            "verification_report",
            "build_yield",
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
    """Themes; reviewers add one by hand, import many (a job) or build one into an environment
    (`POST {id}/build/`, the `environments.build` job with origin theme)."""

    queryset = Theme.objects.select_related("category").prefetch_related("environments")
    serializer_class = ThemeSerializer
    filterset_fields = ["source_kind", "category"]
    search_fields = ["name", "title", "description"]
    required_roles = {"build": REVIEWER}

    @action(detail=True, methods=["post"], parser_classes=[SafeJSONParser])
    def build(self, request, pk=None):
        """Build this theme into an environment: optional name, title, category, options."""
        theme = self.get_object()
        data = request.data if isinstance(request.data, dict) else {}
        try:
            build_request = theme_request_from_submission(theme.pk, data, request.user)
        except BuildRequestError as exc:
            return refuse(str(exc))
        job = queue_submission(build_request, request.user)
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    def perform_create(self, serializer):
        serializer.save(created_by=self.request.user)

    @action(detail=False, methods=["post"], url_path="import")
    def import_themes(self, request):
        payload = ThemeImportSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        submit.check_may_start_commands(request.user, payload.validated_data.get("mcp_command"))
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


def refuse(message: str) -> Response:
    return Response(
        {"error": message, "detail": {"detail": [message]}}, status=status.HTTP_400_BAD_REQUEST
    )


class EnvironmentViewSet(viewsets.ReadOnlyModelViewSet):
    """Environment versions. Admins retire; reviewers start catalogue builds."""

    queryset = with_superseded(Environment.objects.select_related("category__parent__parent"))
    filterset_fields = {
        "status": ["exact"],
        "category": ["exact"],
        "name": ["exact"],
        "origin": ["exact"],
        "tool_count": ["gte", "lte"],
        "task_count": ["gte", "lte"],
    }
    search_fields = ["name", "title", "description"]
    ordering_fields = ["name", "created_at", "tool_count", "task_count"]
    required_roles = {"retire": ADMIN, "build": REVIEWER}

    def get_serializer_class(self):
        return EnvironmentDetailSerializer if self.action == "retrieve" else EnvironmentSerializer

    @action(detail=False, methods=["get"], url_path="yield")
    def build_yield(self, request):
        """The build yield summed over builds (filters apply: ?status=, ?name=, ...): per origin,
        theme tools -> schema entities -> tools implemented -> tools verified -> tasks."""
        from environments.build_yield import yield_summary

        environments = self.filter_queryset(self.get_queryset())
        return Response(yield_summary(environments))

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

    @action(detail=False, methods=["post"], parser_classes=[SafeJSONParser, MultiPartParser])
    def build(self, request):
        """Build one environment from a built-in source (JSON {"source": NAME}), an uploaded
        file (multipart: file, name, title, category "Primary/Secondary/Tertiary"), a theme or
        an MCP server, or many built-in sources ({"sources": [...]}), or an Agent-World release
        (multipart: `release`, a zip or tar archive of a release or of one environment's
        files, checkpoint and questions; optional `env` ids): one catalogue run, one build
        per environment (the answer adds `catalogue_run`). Everything is validated before a
        job is queued (environments.builder.dispatch, as the console's form); the answer is
        the job (202)."""
        # A multipart body over AW_MAX_UPLOAD_BYTES is refused before parsing by
        # aw_site.middleware.RequestSizeLimitMiddleware; the file's own size is checked after.
        files = request.FILES if hasattr(request, "FILES") else {}
        try:
            build_request = request_from_submission(request.data, files, request.user)
            if isinstance(build_request, ReleaseUpload):
                run = queue_release(build_request, request.user)
                answer = {
                    **JobSerializer(run.job).data,
                    "catalogue_run": run.pk,
                    "environments": build_request.environments,
                    "problems": list(build_request.problems),
                }
                return Response(answer, status=status.HTTP_202_ACCEPTED)
        except BuildRequestError as exc:
            return refuse(str(exc))
        job = queue_submission(build_request, request.user)
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
    from environments.catalogue_run_api import register as register_catalogue_runs

    register_catalogue_runs(router)
