"""The training run's charts: one small chart per quantity and phase, named in plain words."""

from __future__ import annotations

import re

import pytest

from tests.support import factories
from training.models import TrainingMetric
from training.views import metric_charts


def panels_of(html: str) -> list[str]:
    return re.findall(r'<figure class="chart-panel">(.*?)</figure>', html)


@pytest.mark.django_db
def test_sft_loss_and_grpo_kl_get_separate_panels_with_their_own_axes():
    run = factories.make_training_run(metrics=3)  # GRPO rows
    for step in range(2):
        TrainingMetric.objects.create(run=run, phase="sft", step=step, values={"loss": 2.0 - step})
    optim = panels_of(metric_charts(run)["optim_chart"])
    titles = [re.search(r"<figcaption>(.*?)</figcaption>", panel).group(1) for panel in optim]
    assert titles == ["SFT warm-up: loss", "GRPO: loss", "GRPO: KL divergence from the base policy"]
    for panel in optim:  # one quantity per panel: one line, its own y ticks
        assert panel.count("<polyline") == 1
    assert 'data-series="sft loss"' in optim[0] and 'data-series="kl"' in optim[2]
    assert ">SFT warm-up step</text>" in optim[0] and ">GRPO step</text>" in optim[2]


@pytest.mark.django_db
def test_signal_charts_use_plain_metric_names():
    html = metric_charts(factories.make_training_run(metrics=3))["signal_chart"]
    assert "GRPO: groups with no reward spread (share)" in html
    assert "GRPO: tool calls per rollout" in html
    assert ">frac_reward_zero_std<" not in html and ">tools/call_frequency<" not in html
