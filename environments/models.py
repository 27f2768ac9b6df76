"""Taxonomy, themes, environment versions and their tools."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.text import slugify


class Category(models.Model):
    """One node of the three-level taxonomy (primary > secondary > tertiary)."""

    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=140)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    level = models.PositiveSmallIntegerField(
        choices=[(1, "primary"), (2, "secondary"), (3, "tertiary")]
    )
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["level", "name"]
        verbose_name_plural = "categories"
        constraints = [
            models.UniqueConstraint(
                fields=["parent", "slug"], name="category_unique_slug_per_parent"
            ),
            models.UniqueConstraint(
                fields=["slug"],
                condition=models.Q(parent__isnull=True),
                name="category_unique_root_slug",
            ),
            models.CheckConstraint(
                condition=models.Q(level__gte=1, level__lte=3), name="category_level_1_to_3"
            ),
        ]

    def __str__(self) -> str:
        return self.path

    @property
    def path(self) -> str:
        parts, node = [], self
        while node is not None:
            parts.append(node.name)
            node = node.parent
        return " > ".join(reversed(parts))

    def clean(self) -> None:
        expected = 1 if self.parent is None else self.parent.level + 1
        if self.level != expected:
            raise ValidationError(
                {"level": f"a category under {self.parent or 'the root'} has level {expected}"}
            )

    def save(self, *args, **kwargs) -> None:
        if not self.slug:
            self.slug = slugify(self.name)[:140]
        if self.parent is not None and not self.level:
            self.level = self.parent.level + 1
        super().save(*args, **kwargs)

    @classmethod
    def ensure_path(
        cls, primary: str, secondary: str | None = None, tertiary: str | None = None
    ) -> Category:
        node = None
        for level, name in enumerate([primary, secondary, tertiary], start=1):
            if not name:
                break
            node, _ = cls.objects.get_or_create(
                parent=node, slug=slugify(name)[:140], defaults={"name": name, "level": level}
            )
        if node is None:
            raise ValueError("a category path needs at least a primary category")
        return node

    def primary(self) -> Category:
        node = self
        while node.parent is not None:
            node = node.parent
        return node


class Theme(models.Model):
    """A topic an environment is built for, with the raw source it came from."""

    class SourceKind(models.TextChoices):
        MCP_SPEC = "mcp_spec", "MCP server spec"
        TOOL_DOC = "tool_doc", "Tool documentation"
        PRD = "prd", "Product requirements"
        DIAGNOSIS = "diagnosis", "Arena diagnosis"
        MANUAL = "manual", "Manual"

    name = models.CharField(max_length=200, db_index=True)
    title = models.CharField(max_length=300, blank=True)
    description = models.TextField(blank=True)
    source_kind = models.CharField(max_length=16, choices=SourceKind.choices)
    raw_spec = models.JSONField(default=dict, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    fingerprint = models.CharField(
        max_length=64, db_index=True, blank=True, help_text="For near-duplicate detection"
    )
    category = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.SET_NULL, related_name="themes"
    )
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="duplicates"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.title or self.name


class ImmutableVersionError(ValidationError):
    pass


class Environment(models.Model):
    """One immutable version of an executable environment (database + verified tools)."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        MINING = "mining"
        VERIFYING = "verifying"
        VERIFIED = "verified"
        REJECTED = "rejected"
        RETIRED = "retired"

    ALLOWED_TRANSITIONS = {
        Status.DRAFT: {Status.MINING, Status.VERIFYING, Status.REJECTED},
        Status.MINING: {Status.VERIFYING, Status.REJECTED, Status.DRAFT},
        Status.VERIFYING: {Status.VERIFIED, Status.REJECTED},
        Status.VERIFIED: {Status.RETIRED},
        Status.REJECTED: {Status.DRAFT},
        Status.RETIRED: set(),
    }
    FROZEN_FIELDS = ("name", "version", "manifest", "content_hash", "package_path")

    name = models.SlugField(max_length=120)
    version = models.PositiveIntegerField(default=1)
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    theme = models.ForeignKey(
        Theme, null=True, blank=True, on_delete=models.SET_NULL, related_name="environments"
    )
    category = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.SET_NULL, related_name="environments"
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.DRAFT, db_index=True
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    package_path = models.CharField(max_length=500, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)
    manifest = models.JSONField(default=dict, blank=True)
    provenance = models.JSONField(default=list, blank=True)
    verification_report = models.JSONField(default=dict, blank=True)
    failure_reason = models.TextField(blank=True)
    tool_count = models.PositiveIntegerField(default=0)
    task_count = models.PositiveIntegerField(default=0)
    task_audit = models.JSONField(
        default=dict,
        blank=True,
        help_text="tasks.audit.AuditSummary: synthesized tasks audited, kept, discarded by reason",
    )
    build_yield = models.JSONField(
        default=dict,
        blank=True,
        help_text="What survived each build stage (environments.builder.stages.STAGES): files, "
        "tables, rows, inferred keys, tools generated, tools verified",
    )
    origin = models.CharField(
        max_length=40,
        blank=True,
        db_index=True,
        help_text="Where the build started (environments.build_yield.origin_of): built-in "
        "source, upload, theme (openapi), theme (mcp), complexified; a column so the catalogue "
        "filters on it at catalogue size",
    )
    table_count = models.PositiveIntegerField(default=0)
    row_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)
    verified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="environment_unique_version")
        ]
        indexes = [
            models.Index(fields=["status", "category"]),
            models.Index(fields=["category", "name"]),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def label(self) -> str:
        return f"{self.name}@v{self.version}"

    def save(self, *args, **kwargs) -> None:
        if self.pk:
            previous = (
                Environment.objects.filter(pk=self.pk).values(*self.FROZEN_FIELDS, "status").first()
            )
            if previous and previous["status"] in (self.Status.VERIFIED, self.Status.RETIRED):
                changed = [f for f in self.FROZEN_FIELDS if previous[f] != getattr(self, f)]
                if changed:
                    raise ImmutableVersionError(
                        f"{self} is verified and immutable ({', '.join(changed)} changed); make a new version"
                    )
            if previous and previous["status"] != self.status:
                allowed = self.ALLOWED_TRANSITIONS.get(previous["status"], set())
                if self.status not in allowed:
                    raise ValidationError(
                        {"status": f"cannot move {self} from {previous['status']} to {self.status}"}
                    )
        super().save(*args, **kwargs)

    def transition(self, status: str, reason: str = "") -> None:
        self.status = status
        if reason:
            self.failure_reason = reason
        if status == self.Status.VERIFIED:
            self.verified_at = timezone.now()
        self.save()

    def next_version_number(self) -> int:
        latest = (
            Environment.objects.filter(name=self.name).aggregate(m=models.Max("version"))["m"] or 0
        )
        return latest + 1


class Tool(models.Model):
    class Kind(models.TextChoices):
        READ = "read"
        WRITE = "write"

    class Origin(models.TextChoices):
        SCHEMA = "schema", "Schema generator"
        LLM = "llm", "LLM tool designer"
        IMPORTED = "imported", "Imported"

    environment = models.ForeignKey(Environment, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.READ)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.SCHEMA)
    schema = models.JSONField(default=dict, help_text="OpenAI function schema")
    source = models.TextField(blank=True)
    verified = models.BooleanField(default=False)
    test_accuracy = models.FloatField(null=True, blank=True)
    verification = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["environment", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["environment", "name"], name="tool_unique_name_per_environment"
            ),
            models.CheckConstraint(
                condition=models.Q(test_accuracy__isnull=True)
                | models.Q(test_accuracy__gte=0, test_accuracy__lte=1),
                name="tool_accuracy_between_0_and_1",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.environment.name}.{self.name}"


class ToolTest(models.Model):
    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="tests")
    name = models.CharField(max_length=200)
    source = models.TextField(blank=True)
    passed = models.BooleanField(null=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["tool", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tool", "name"], name="tooltest_unique_name_per_tool")
        ]

    def __str__(self) -> str:
        return self.name


class CatalogueRun(models.Model):
    """One build of a directory of documents (environments/directory/): what it selected and
    the job that fans it out. Its documents are the ledger's items."""

    source = models.CharField(max_length=500, help_text="The folder of documents it listed")
    selection = models.JSONField(
        default=dict, blank=True, help_text="only (glob), sample, seed, limit"
    )
    tasks_per_environment = models.PositiveSmallIntegerField(default=5)
    listed = models.PositiveIntegerField(default=0, help_text="Documents the selection named")
    done_before = models.PositiveIntegerField(
        default=0, help_text="Of those, published or rejected by an earlier run: not built again"
    )
    retry_rejected = models.BooleanField(
        default=False,
        help_text="Build again what an earlier run rejected (documents and parts of split ones); "
        "what was published is still skipped",
    )
    job = models.ForeignKey(
        "aw_site.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"catalogue run #{self.pk}"

    @property
    def selection_label(self) -> str:
        """The selection in words: "only stripe.com/*, sample 20 (seed 25), limit 5"."""
        chosen = self.selection or {}
        if chosen.get("agent_world"):
            named = chosen.get("env_ids") or []
            return "Agent-World release: " + (
                f"environments {', '.join(named)}" if named else "every environment"
            )
        parts = []
        if chosen.get("only"):
            parts.append(f"only {chosen['only']}")
        if chosen.get("sample"):
            parts.append(f"sample {chosen['sample']} (seed {chosen.get('seed') or 0})")
        if chosen.get("limit"):
            parts.append(f"limit {chosen['limit']}")
        label = ", ".join(parts) or "all documents"
        return f"{label}, retrying what earlier runs rejected" if self.retry_rejected else label


class CatalogueItem(models.Model):
    """The ledger: one row per document (its key and the sha256 of its bytes), whichever run
    built it. Published or rejected is final: no later run builds that document again, unless
    it is a run that retries rejections (`retry_rejected`): the rejected row is then kept as
    history, marked `superseded`, and the retry builds it on a new row of its own.

    A document that splits into parts (theme_split) gets one row per part besides its own (the
    part's key, the sha256 of the part's theme), each built by its own job, so a huge document
    resumes part by part; the document's row is final once every part's is."""

    class State(models.TextChoices):
        QUEUED = "queued"
        BUILDING = "building"
        PUBLISHED = "published"  # at least one of its environments was published
        REJECTED = "rejected"  # the document or every one of its builds was refused, with why
        FAILED = "failed"  # its job gave up (a lost worker): a later run builds it again

    FINAL_STATES = (State.PUBLISHED, State.REJECTED)

    run = models.ForeignKey(CatalogueRun, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(
        max_length=500,
        help_text="The document's path in the directory; a part's is the path, '#', its label",
    )
    sha256 = models.CharField(max_length=64)
    state = models.CharField(
        max_length=16, choices=State.choices, default=State.QUEUED, db_index=True
    )
    reason = models.TextField(blank=True, help_text="Why it was rejected or failed")
    reason_kind = models.CharField(max_length=200, blank=True, help_text="The reason, grouped")
    category = models.CharField(max_length=300, blank=True)
    themes = models.JSONField(default=list, blank=True, help_text="Theme ids, one per part")
    environments = models.JSONField(
        default=list, blank=True, help_text="Environment ids, one per part built"
    )
    verified_tools = models.PositiveIntegerField(default=0)
    document = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="part_items",
        help_text="For a part: the document item that waits for it",
    )
    part = models.CharField(
        max_length=200, blank=True, help_text="For a part: its label in the family; else empty"
    )
    parts = models.PositiveIntegerField(
        default=0, help_text="For a split document: its parts, each an item of its own"
    )
    job = models.ForeignKey(
        "aw_site.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    seconds = models.FloatField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    superseded = models.BooleanField(
        default=False,
        help_text="A later run built this document again (retrying its rejection): this row is "
        "history, no longer the document's outcome",
    )
    retries = models.CharField(
        max_length=16,
        blank=True,
        help_text="What an earlier run's row of this document ended as when this run took it "
        "again (rejected, failed; published for a split document whose rejected parts it "
        "retries); empty for a first build",
    )

    class Meta:
        ordering = ["key"]
        constraints = [
            models.UniqueConstraint(
                fields=["key", "sha256"],
                condition=models.Q(superseded=False),
                name="catalogue_item_unique_document",
            )
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.state})"

    @property
    def is_final(self) -> bool:
        return self.state in self.FINAL_STATES
