"""The console in a real browser: browse, replay, review, start a round and watch it run."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from arena.models import EvolutionRound, ExpansionProposal
from aw_site.models import Job
from tests.browser.conftest import screenshot
from tests.support import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_browse_catalogue_to_an_environment_and_its_tabs(
    page, live_server, sign_in, viewer, tmp_path
):
    airports = factories.make_category("Travel", "Flights", "Airports")
    for name in ("airports", "airlines", "flight-status", "weather-stations", "rail-timetables"):
        factories.make_environment(name, category=airports, tools=6, tasks=12)
    factories.make_environment(
        "recipes", category=factories.make_category("Food", "Cooking", "Recipes")
    )
    bookstore = factories.make_package_environment(tmp_path)
    factories.make_task(bookstore)
    sign_in(viewer)
    page.click("nav >> text=Catalogue")
    expect(page.locator(".card")).to_have_count(7)
    expect(page.locator(".taxonomy")).to_contain_text("Travel")
    screenshot(page, "catalogue")

    page.fill("#q", "book")  # htmx search, no reload
    expect(page.locator(".card")).to_have_count(1)
    expect(page).to_have_url(f"{live_server.url}/environments/?q=book")
    page.click('[data-environment="bookstore"]')
    expect(page.locator("h1")).to_contain_text("Bookstore")
    expect(page.locator("#provenance")).to_contain_text("tests/support/sample_package.py")

    page.click('[data-tab="database"]')
    expect(page.locator('[data-table="author"]')).to_be_visible()
    page.click('[data-table="book"]')
    expect(page.locator("table.rows")).to_contain_text("Solaris")
    expect(page.locator("#row-range")).to_have_text("Rows 1–4 of 4")
    screenshot(page, "environment_database")

    page.click('[data-tab="tools"]')
    page.click('[data-tool="place_order"] summary')
    expect(page.locator('[data-tool="place_order"]')).to_contain_text(
        "only {book['stock']} in stock"
    )

    page.click('[data-tab="graph"]')
    expect(page.locator("svg.tool-graph .node")).to_have_count(5)
    screenshot(page, "environment_graph")

    page.click('[data-tab="mcp"]')
    expect(page.locator("#mcp-stdio")).to_have_text("python manage.py serve_mcp bookstore")
    expect(page).to_have_url(f"{live_server.url}/environments/{bookstore.pk}/?tab=mcp")


def test_open_a_failed_trajectory_and_step_through_it(page, live_server, sign_in, reviewer):
    # A reviewer: the scene's task is an arena task, whose reward reasons viewers do not see.
    scene = factories.make_review_scene()
    sign_in(reviewer)
    page.goto(f"{live_server.url}/trajectories/?outcome=failed&label=tool_error")
    rows = page.locator("#trajectories tbody tr")
    expect(rows).to_have_count(1)
    rows.first.locator("a").first.click()
    expect(page.locator("#outcome")).to_have_text("failed")

    steps = page.locator("article.step")
    expect(steps.nth(0)).to_be_visible()
    expect(steps.nth(1)).to_be_hidden()
    page.click('[data-action="next"]')
    expect(steps.nth(1)).to_be_visible()
    expect(steps.nth(0)).to_be_hidden()
    expect(steps.nth(1).locator('[data-field="error"]')).to_have_text("ValueError: only 5 in stock")
    expect(page.locator("[data-position]")).to_have_text("Step 2 of 3")
    expect(page.locator("#reward")).to_contain_text("purchase row missing")
    expect(page.locator("#diagnosis [data-label=tool_error]")).to_be_visible()
    screenshot(page, "trajectory_replay")

    page.click('[data-jump="2"]')  # jump from the step strip
    expect(page.locator("[data-position]")).to_have_text("Step 3 of 3")
    page.click('[data-action="first"]')
    page.keyboard.press("ArrowRight")
    expect(page.locator("[data-position]")).to_have_text("Step 2 of 3")
    page.click('[data-action="play"]')  # plays on to the end and stops
    expect(page.locator("[data-position]")).to_have_text("Step 3 of 3", timeout=4000)
    expect(page.locator('[data-action="play"]')).to_have_text("▶ Play")
    assert scene["failed"].pk == int(page.url.rstrip("/").rsplit("/", 1)[-1])


def test_the_replay_sets_each_gold_step_beside_the_agent_step(page, live_server, sign_in, viewer):
    # A viewer of an arena task: the verdicts beside the steps, no gold tool or arguments.
    scene = factories.make_review_scene()
    sign_in(viewer)
    page.goto(f"{live_server.url}/trajectories/{scene['failed'].pk}/")
    panel = page.locator("#step-comparison")
    expect(panel).to_contain_text("1 match · 1 differ · 0 missing")
    expect(panel.locator('tr[data-status="differs"]')).to_contain_text("step 2")
    expect(panel).not_to_contain_text("place_order")
    page.click('[data-action="next"]')
    badge = page.locator("#step-2 [data-gold-match]")
    expect(badge).to_have_text("gold step 1: differs")
    badge.click()
    expect(page).to_have_url(f"{live_server.url}/trajectories/{scene['failed'].pk}/#gold-step-1")


def test_reviewer_approves_a_proposal(page, live_server, sign_in, reviewer):
    scene = factories.make_review_scene()
    proposal = scene["proposal"]
    sign_in(reviewer)
    page.goto(f"{live_server.url}/rounds/{scene['round'].number}/")
    expect(page.locator('svg.chart-bar .bar[data-label="tool_error"]')).to_be_visible()
    screenshot(page, "round_detail")
    card = page.locator(f"#proposal-{proposal.pk}")
    card.locator("textarea").fill("Yes: more write-chain tasks")
    card.locator('button[value="approve"]').click()
    expect(page.locator(f"#proposal-{proposal.pk} [data-proposal-status]")).to_have_text("approved")
    expect(page.locator(f"#proposal-{proposal.pk}")).to_contain_text("Yes: more write-chain tasks")
    expect(page.locator(f"#proposal-{proposal.pk} button")).to_have_count(0)
    proposal.refresh_from_db()
    assert proposal.status == ExpansionProposal.Status.APPROVED
    assert proposal.reviewer == reviewer


def test_viewer_is_refused_the_approve(page, live_server, sign_in, viewer):
    scene = factories.make_review_scene()
    proposal = scene["proposal"]
    sign_in(viewer)
    page.goto(f"{live_server.url}/rounds/{scene['round'].number}/")
    expect(page.locator(f"#proposal-{proposal.pk}")).to_be_visible()
    expect(page.locator('button[value="approve"]')).to_have_count(0)
    expect(page.locator("#proposals")).to_contain_text("Only reviewers approve or reject")
    # A forged POST from the viewer's own session, with a valid CSRF token, is still refused.
    status = page.evaluate(
        """async (url) => {
            const token = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
            const body = new URLSearchParams({decision: 'approve', note: 'forged'});
            const response = await fetch(url, {method: 'POST', body, headers: {'X-CSRFToken': token}});
            return response.status;
        }""",
        f"/proposals/{proposal.pk}/review/",
    )
    assert status == 403
    proposal.refresh_from_db()
    assert proposal.status == ExpansionProposal.Status.PENDING


def test_start_a_round_and_watch_its_progress_bar_move(
    page, live_server, sign_in, reviewer, monkeypatch
):
    # Jobs are recorded but not handed to a worker: this test plays the worker and moves the
    # job's progress itself while the page polls.
    monkeypatch.setattr("aw_site.jobs.dispatch", lambda job_id: None)
    policy = factories.make_policy("tiny-policy", kind="local_hf")
    factories.make_round(policy=policy, status=EvolutionRound.Status.DONE, scores={"Shopping": 0.3})
    sign_in(reviewer)
    page.click("nav >> text=Rounds")
    page.click("#start-round summary")
    page.click("#start-round-button")
    expect(page.locator("h1")).to_contain_text("Round 2")
    evolution_round = EvolutionRound.objects.get(number=2)
    assert evolution_round.started_by == reviewer
    job = evolution_round.current_job
    bar = page.locator(f"#job-{job.pk}-progress")
    expect(bar).to_have_attribute("data-progress", "0")

    Job.objects.filter(pk=job.pk).update(
        state=Job.State.RUNNING,
        progress=0.25,
        message="evaluating bookstore",
        log_tail="[10:00:00] evaluating bookstore",
    )
    expect(bar).to_have_attribute("data-progress", "25", timeout=5000)
    expect(bar).to_contain_text("evaluating bookstore")
    Job.objects.filter(pk=job.pk).update(progress=0.8, message="scoring 8 trajectories")
    expect(bar).to_have_attribute("data-progress", "80", timeout=5000)
    width = bar.locator(".fill").evaluate("el => el.style.width")
    assert width == "80%"

    other = factories.make_job("environments.mine", progress=0.4, log="[10:00:01] mined 120 rows")
    page.goto(f"{live_server.url}/jobs/")
    jobs_bar = page.locator(f"#job-{other.pk}-progress")
    expect(jobs_bar).to_have_attribute("data-progress", "40")
    Job.objects.filter(pk=other.pk).update(
        progress=0.9, log_tail="[10:00:01] mined 120 rows\n[10:00:02] complexified"
    )
    expect(jobs_bar).to_have_attribute("data-progress", "90", timeout=5000)
    expect(jobs_bar.locator(".log")).to_contain_text("complexified")
    screenshot(page, "jobs")
    Job.objects.filter(pk=other.pk).update(state=Job.State.SUCCEEDED, progress=1.0)
    expect(jobs_bar).to_have_attribute("data-state", "succeeded", timeout=5000)
    expect(jobs_bar).not_to_have_attribute("hx-trigger", "every 1s")


def test_training_run_reward_curves_grow_while_it_runs(page, live_server, sign_in, viewer):
    from training.models import TrainingRun

    job = factories.make_job("training.grpo", progress=0.3, message="GRPO step 6 of 20")
    run = factories.make_training_run(metrics=6, status=TrainingRun.Status.RUNNING, job=job)
    sign_in(viewer)
    page.goto(f"{live_server.url}/training/{run.pk}/")
    metrics = page.locator("#run-metrics")
    expect(metrics).to_have_attribute("data-metric-count", "6")
    expect(page.locator('polyline[data-series="reward_mean"]')).to_have_count(1)
    reward_card = page.locator('[data-card="reward_mean"]')
    expect(reward_card.locator(".value")).to_have_text("0.70")
    expect(reward_card.locator("[data-card-source]")).to_have_text("GRPO step 5")
    for step in (6, 7, 8):
        factories.add_metric(run, step)
    expect(metrics).to_have_attribute("data-metric-count", "9", timeout=6000)
    # The cards follow the newest step the trainer stored.
    expect(reward_card.locator(".value")).to_have_text("1.00")
    expect(reward_card.locator("[data-card-source]")).to_have_text("GRPO step 8")
    screenshot(page, "training_run")


def test_reviewer_uploads_a_file_and_watches_the_build(
    page, live_server, sign_in, reviewer, settings, tmp_path
):
    """The New environment page: upload a CSV, watch the build's progress, open the result."""
    settings.AW_JOBS_MODE = "thread"  # the build really runs, in this process
    settings.STORAGE_ROOT = tmp_path / "storage"
    data = tmp_path / "cities.csv"
    data.write_text(
        "code,name,country,people\n"
        + "".join(f"C{i:03d},City {i},{'NO' if i % 2 else 'SE'},{1000 + i}\n" for i in range(12))
    )
    sign_in(reviewer)
    page.click("nav >> text=Catalogue")
    page.click("#new-environment-button")
    page.set_input_files("#file", str(data))
    page.fill("#name", "nordic_cities")
    page.click("#build-button")
    expect(page.locator("h1")).to_contain_text("Build")
    link = page.locator("#environment-link")
    expect(link).to_contain_text("nordic_cities@v1", timeout=60_000)
    expect(page.locator(".build-result")).to_contain_text("verified tools")
    screenshot(page, "new_environment_build")
    link.click()
    expect(page.locator("h1")).to_contain_text("verified")
