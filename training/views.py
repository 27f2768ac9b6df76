"""Console: training runs and policies (the trajectory pages, which filter by arena labels and
rounds, are arena/trajectory_views.py)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods

from aw_site import charts
from aw_site.console import console_action, console_page, page_of, pretty_json, whole_number
from aw_site.metric_names import plain_metric_name, plain_phase_name
from aw_site.roles import REVIEWER, role_required
from environments.models import Environment
from training.models import Policy, TrainingMetric, TrainingRun
from training.run_cards import run_cards
from training.training_set import training_set_summary

METRIC_POLL = "every 2s"


@console_page
def training_run_list(request):
    runs = TrainingRun.objects.select_related("base_policy", "output_policy", "job")
    status = request.GET.get("status", "")
    if status in TrainingRun.Status.values:
        runs = runs.filter(status=status)
    context = {
        "page": page_of(request, runs, 30),
        "status": status,
        "statuses": TrainingRun.Status.values,
    }
    return render(request, "training/run_list.html", context)


# The charted metrics by panel group; each (phase, metric) gets its own small chart, so no two
# quantities (or two phases' step counters: SFT's and GRPO's) share an axis.
CHART_GROUPS = {
    "reward": ("reward_mean", "success_rate"),
    "optim": ("loss", "kl"),
    "signal": (
        "frac_reward_zero_std",
        "tools/call_frequency",
        "tools/failure_frequency",
        "episodes/token_budget_ended",
    ),
}
CHART_TITLES = {
    "reward": "Reward and success rate",
    "optim": "Loss and KL divergence",
    "signal": "GRPO signal: is there anything to learn from?",
}
PHASE_ORDER = {"sft": 0, "grpo": 1}  # the warm-up comes first, as it runs first
SHARE_METRICS = frozenset(
    {
        "success_rate",
        "frac_reward_zero_std",
        "tools/failure_frequency",
        "episodes/token_budget_ended",
    }
)


def _metric_panels(
    curves: dict[tuple[str, str], list[tuple[float, float]]], keys: tuple[str, ...]
) -> list[tuple[str, str]]:
    """One small chart per (phase, metric) with data, captioned in plain words."""
    panels = []
    in_order = sorted(
        curves.items(), key=lambda item: PHASE_ORDER.get(item[0][0], len(PHASE_ORDER))
    )
    for key in keys:
        for (phase, metric), points in in_order:
            if metric != key:
                continue
            name = key if phase == "grpo" else f"{phase} {key}"  # the data-series key
            caption = f"{plain_phase_name(phase)}: {plain_metric_name(key)}"
            svg = charts.line_chart(
                {name: points},
                width=360,
                height=180,
                y_range=(0.0, 1.0) if key in SHARE_METRICS else None,
                x_label=f"{plain_phase_name(phase)} step",
                aria_label=caption,
            )
            panels.append((caption, svg))
    return panels


def metric_charts(run: TrainingRun) -> dict[str, Any]:
    """Reward/success, loss/KL and GRPO-signal curves (share of groups with zero reward
    variance, tool calls per rollout, failed-call share, episodes ended by the token budget)
    from the run's metric rows, one small chart per quantity and phase (the metric cards are
    training.run_cards)."""
    metrics = list(
        TrainingMetric.objects.filter(run=run)
        .order_by("step")
        .values_list("phase", "step", "values")
    )
    curves: dict[tuple[str, str], list[tuple[float, float]]] = {}
    charted = {key for keys in CHART_GROUPS.values() for key in keys}
    for phase, step, values in metrics:
        if not isinstance(values, dict):
            continue
        for key in charted:
            value = values.get(key)
            if isinstance(value, int | float):
                curves.setdefault((phase, key), []).append((step, float(value)))
    drawn = {}
    for group, keys in CHART_GROUPS.items():
        panels = _metric_panels(curves, keys)
        drawn[f"{group}_chart"] = mark_safe(
            charts.panel_grid(panels, title=CHART_TITLES[group])
            if panels
            else charts.line_chart({}, title=CHART_TITLES[group])
        )
    return {**drawn, "metric_count": len(metrics)}


def _run_is_live(run: TrainingRun) -> bool:
    return run.status in (TrainingRun.Status.QUEUED, TrainingRun.Status.RUNNING)


@console_page
def training_run_detail(request, pk: int):
    run = get_object_or_404(
        TrainingRun.objects.select_related("base_policy", "output_policy", "job"), pk=pk
    )
    context = {
        "run": run,
        "live": _run_is_live(run),
        "metric_poll": METRIC_POLL,
        "config_json": pretty_json(run.config),
        "summary_json": pretty_json(run.summary),
        "environments": run.environments.only("id", "name", "version"),
        "checkpoints": run.checkpoints.all(),  # the path only for reviewers (the template)
        "rounds": run.rounds.all(),
        "training_set": training_set_summary(run),
        "training_links": run.task_links.select_related("task__environment")[:TRAINING_SET_ROWS],
        "cards": run_cards(run),
        **metric_charts(run),
    }
    return render(request, "training/run_detail.html", context)


TRAINING_SET_ROWS = 100  # the rest through the API, a page at a time


@console_page
def training_run_metrics(request, pk: int):
    """HTMX fragment polled while the run is queued or running."""
    run = get_object_or_404(TrainingRun, pk=pk)
    context = {
        "run": run,
        "live": _run_is_live(run),
        "metric_poll": METRIC_POLL,
        "cards": run_cards(run),
        **metric_charts(run),
    }
    return render(request, "training/_run_metrics.html", context)


# --- New training run: the form is generated from RunOptions --------------------------------


def _new_run_context(values: dict[str, Any] | None = None, errors: dict[str, str] | None = None):
    from training.run_options import RunOptions

    values = values or {}
    fields = []
    for row in RunOptions.form_fields():
        given = values.get(row["name"], row["default"])
        fields.append(
            {
                **row,
                "value": "" if given is None else given,
                "error": (errors or {}).get(row["name"], ""),
            }
        )
    return {
        "policies": Policy.objects.order_by("name", "-version"),
        "environments": Environment.objects.filter(status=Environment.Status.VERIFIED).order_by(
            "name"
        ),
        "fields": fields,
        "values": values,
        "errors": errors or {},
    }


def _posted_options(post) -> dict[str, Any]:
    """The options a form sets, as typed values; fields left at their default are omitted."""
    from training.run_options import RunOptions

    options: dict[str, Any] = {}
    for row in RunOptions.form_fields():
        name = row["name"]
        if row["kind"] == "checkbox":
            checked = post.get(name) == "on"
            if checked != row["default"]:
                options[name] = checked
            continue
        if row["kind"] == "multiple":
            picked = post.getlist(name)
            if picked and picked != row["default"]:
                options[name] = picked
            continue
        raw = post.get(name, "").strip()
        if raw == "" or raw == str(row["default"]):
            continue
        options[name] = raw  # pydantic converts "4" and "1e-5" in lax mode
    return options


@login_required
@role_required(REVIEWER)
@require_http_methods(["GET", "POST"])
def training_run_new(request):
    """Start a training run: base policy, environments, options (SFT, GRPO, token budgets,
    bf16, gradient checkpointing, LoRA, vLLM, held-out evaluation)."""
    from training.run_options import RunOptions, ValidationError, option_errors
    from training.service import UntrainablePolicy, start_training_run

    if request.method == "GET":
        return render(request, "training/run_new.html", _new_run_context())
    options = _posted_options(request.POST)
    values = {**options, "base_policy": request.POST.get("base_policy", "")}
    chosen = request.POST.getlist("environments")
    values["environments"] = chosen
    errors: dict[str, str] = {}
    policy = Policy.objects.filter(pk=whole_number(request.POST.get("base_policy"))).first()
    if policy is None:
        errors["base_policy"] = "choose the policy to train"
    environments = list(
        Environment.objects.filter(pk__in=[whole_number(e) for e in chosen if whole_number(e)])
    )
    try:
        options = RunOptions.model_validate(options).model_dump(include=set(options))
    except ValidationError as exc:
        errors.update(option_errors(exc))
    if not errors:
        try:
            run = start_training_run(request.user, policy, environments, options)
        except UntrainablePolicy as exc:
            errors["base_policy"] = str(exc)
        except ValueError as exc:
            errors["environments"] = str(exc)
        else:
            return redirect("training-run-detail", pk=run.pk)
    context = _new_run_context(values, errors)
    return render(request, "training/run_new.html", context, status=400)


POLICY_FORM_FIELDS = ("name", "base_url", "model_name", "serves_checkpoint", "description")


def _policy_list_context(
    values: dict[str, str] | None = None,
    errors: Any = None,
    fault_values: dict[str, str] | None = None,
    fault_errors: Any = None,
):
    from training.policies.fault_plans import FAULTS, NO_FAULT
    from training.service import ensure_env_policy

    env_policy = ensure_env_policy()
    return {
        "policies": Policy.objects.select_related("parent").order_by("name", "-version")[:300],
        "env_policy": env_policy,
        "values": values or {},
        "errors": errors or {},
        "faults": (*FAULTS, NO_FAULT),
        "fault_values": fault_values or {"seed": "0", "clean_share": "0.1"},
        "fault_errors": fault_errors or {},
    }


@console_page
def policy_list(request):
    """Every policy and version; reviewers register endpoint policies here."""
    return render(request, "training/policy_list.html", _policy_list_context())


@console_action(REVIEWER)
def policy_create(request):
    """Register an endpoint policy (a new version when the name exists), as POST /api/policies/."""
    from training.api import PolicySerializer

    values = {k: request.POST.get(k, "").strip() for k in POLICY_FORM_FIELDS}
    serializer = PolicySerializer(data={**values, "kind": Policy.Kind.OPENAI})
    if not serializer.is_valid():
        errors = {
            field: " ".join(str(m) for m in problems)
            for field, problems in serializer.errors.items()
        }
        context = _policy_list_context(values, errors)
        return render(request, "training/policy_list.html", context, status=400)
    policy = serializer.save()
    messages.success(request, f"Registered the endpoint policy {policy}.")
    return redirect("policy-list")


@console_action(REVIEWER)
def fault_policy_create(request):
    """Register a fault-injection policy (diagnosis calibration), as POST /api/policies/ with
    ``kind: fault_injection`` and its ``config``."""
    from training.api import PolicySerializer

    values = {
        k: request.POST.get(k, "").strip()
        for k in ("name", "fault", "seed", "clean_share", "description")
    }
    config: dict[str, Any] = {"fault": values["fault"] or None}
    for key, kind in (("seed", int), ("clean_share", float)):
        if values[key]:
            try:
                config[key] = kind(values[key])
            except ValueError:
                config[key] = values[key]  # FaultConfig names the problem
    serializer = PolicySerializer(
        data={
            "name": values["name"],
            "description": values["description"],
            "kind": Policy.Kind.FAULT_INJECTION,
            "config": config,
        }
    )
    if not serializer.is_valid():
        errors = {
            field: " ".join(str(m) for m in problems)
            for field, problems in serializer.errors.items()
        }
        context = _policy_list_context(fault_values=values, fault_errors=errors)
        return render(request, "training/policy_list.html", context, status=400)
    policy = serializer.save()
    messages.success(request, f"Registered the fault-injection policy {policy}.")
    return redirect("policy-list")
