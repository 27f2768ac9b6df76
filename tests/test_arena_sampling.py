"""Arena rounds sample environments per category, reproducibly."""

from __future__ import annotations

from arena.sampling import sample_environments, stratify

CATEGORIES = {"Travel": 5, "Finance": 3, "Health": 1}


def catalogue() -> list[dict]:
    return [
        {"name": f"{primary.lower()}_{i}", "category": {"primary": primary, "secondary": "x"}}
        for primary, count in CATEGORIES.items()
        for i in range(count)
    ]


def names(envs):
    return [e["name"] for e in envs]


def test_every_category_covered_with_its_share():
    sample = sample_environments(catalogue(), per_category=2, seed=7)
    by_category = stratify(sample)
    assert {k: len(v) for k, v in by_category.items()} == {"Finance": 2, "Health": 1, "Travel": 2}


def test_same_seed_same_sample_regardless_of_input_order():
    envs = catalogue()
    first = sample_environments(envs, per_category=2, seed=11)
    again = sample_environments(list(reversed(envs)), per_category=2, seed=11)
    assert names(first) == names(again)


def test_different_seeds_draw_different_environments():
    draws = {
        tuple(names(sample_environments(catalogue(), per_category=2, seed=s))) for s in range(8)
    }
    assert len(draws) > 1


def test_limit_covers_every_category_before_any_second_pick():
    sample = sample_environments(catalogue(), per_category=3, seed=1, limit=3)
    assert {e["category"]["primary"] for e in sample} == set(CATEGORIES)


def test_accepts_objects_with_name_and_category_attributes():
    class Env:
        def __init__(self, name, primary):
            self.name, self.category = name, {"primary": primary}

    envs = [Env("a", "P"), Env("b", "P"), Env("c", "Q")]
    assert [e.name for e in sample_environments(envs, per_category=1, seed=0)] in (
        ["a", "c"],
        ["b", "c"],
    )
