"""The task review queue in a real browser: a reviewer marks a task meaningless with the keys,
moves on to the next task, and the next training set (the function training picks tasks with)
no longer holds the marked task while an unmarked one stays."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tasks.models import TaskReview
from tests.browser.conftest import screenshot
from tests.support import factories
from training.service import training_tasks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def train_task(environment, instruction: str):
    return factories.make_task(
        environment,
        split="train",
        instruction=instruction,
        gold_chain=[
            {"tool": "search_books", "arguments": {"title": "Dune"}, "kind": "read"},
            {"tool": "get_book", "arguments": {"book_id": 7}, "kind": "read", "result": {"id": 7}},
        ],
        reference_answer="Frank Herbert",
        write_steps=0,
    )


def test_reviewer_marks_a_task_meaningless_with_keys_and_it_leaves_training(
    page, live_server, sign_in, reviewer
):
    environment = factories.make_environment("bookshop", tasks=0)
    tasks = [
        train_task(environment, "List the book ids whose id is 497."),
        train_task(environment, "Who wrote the book titled Dune?"),
    ]
    run = factories.make_training_run(metrics=0)
    run.environments.set([environment])
    assert {t.pk for t in training_tasks(run, per_environment=10)} == {t.pk for t in tasks}

    sign_in(reviewer)
    page.click("nav >> text=Review tasks")
    expect(page.locator("h1")).to_contain_text("Review tasks")
    expect(page.locator("#review-keys")).to_contain_text("meaningless")
    card = page.locator("#review-task")
    shown = int(card.get_attribute("data-task"))
    other = next(t for t in tasks if t.pk != shown)
    expect(card.locator(".gold")).to_contain_text("search_books")  # the gold run beside it
    expect(card.locator(".gold")).to_contain_text('"title": "Dune"')

    page.locator("h1").click()
    page.keyboard.press("m")
    expect(page.locator('[data-mark="meaningless"] input')).to_be_checked()
    page.keyboard.press("/")
    page.keyboard.type("names a row by its surrogate id")
    page.locator("h1").click()
    page.keyboard.press("Enter")

    expect(page.locator(".messages")).to_contain_text(
        f"Task #{shown} marked meaningless: it leaves training and arena sampling."
    )
    expect(page.locator("#review-task")).to_have_attribute("data-task", str(other.pk))
    screenshot(page, "task_review_queue")
    review = TaskReview.objects.get()
    assert (review.task_id, review.reviewer_id, review.mark) == (shown, reviewer.pk, "meaningless")
    assert review.note == "names a row by its surrogate id"

    next_set = {t.pk for t in training_tasks(run, per_environment=10)}
    assert shown not in next_set and other.pk in next_set

    page.click("text=Marks per generator")
    expect(page.locator("#marks-by-intent")).to_contain_text("look-up")
    expect(page.locator("#marks-totals")).to_contain_text("1 task out of training")
