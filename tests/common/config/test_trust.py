"""The four trust strategies as in the seed, and the human gate to elevated."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from common.config import (
    ConfigError,
    DisabledTrust,
    MilestoneTrust,
    PerCategoryTrust,
    WeightedTrust,
    parse_config,
)

SEED_DISABLED = """
trust:
  strategy: "disabled"
  initial_level: "standard"
"""
SEED_WEIGHTED = """
trust:
  strategy: "weighted"
  initial_level: "sandboxed"
  weights:
    task_difficulty: 0.3
    completion_rate: 0.25
    error_rate: 0.25
    human_feedback: 0.2
  promotion_thresholds:
    sandboxed_to_restricted: 0.4
    restricted_to_standard: 0.6
    standard_to_elevated:
      score: 0.8
      requires_human_approval: true
"""
SEED_PER_CATEGORY = """
trust:
  strategy: "per_category"
  initial_levels:
    file_system: "restricted"
    git: "restricted"
    code_execution: "sandboxed"
    deployment: "sandboxed"
    database: "sandboxed"
    terminal: "sandboxed"
  promotion_criteria:
    file_system:
      restricted_to_standard:
        tasks_completed: 10
        quality_score_min: 7.0
    deployment:
      sandboxed_to_restricted:
        tasks_completed: 20
        quality_score_min: 8.5
        requires_human_approval: true
"""
SEED_MILESTONE = """
trust:
  strategy: "milestone"
  initial_level: "sandboxed"
  milestones:
    sandboxed_to_restricted:
      tasks_completed: 5
      quality_score_min: 7.0
      auto_promote: true
    restricted_to_standard:
      tasks_completed: 20
      quality_score_min: 8.0
      time_active_days: 7
      auto_promote: true
    standard_to_elevated:
      requires_human_approval: true
      clean_history_days: 14
  re_verification:
    enabled: true
    interval_days: 90
    decay_on_idle_days: 30
    decay_on_error_rate: 0.15
"""


def load(text: str) -> Any:
    return parse_config(yaml.safe_load(text), source="trust.yaml")


@pytest.mark.parametrize(
    ("text", "model"),
    [
        (SEED_DISABLED, DisabledTrust),
        (SEED_WEIGHTED, WeightedTrust),
        (SEED_PER_CATEGORY, PerCategoryTrust),
        (SEED_MILESTONE, MilestoneTrust),
    ],
)
def test_seed_examples_load(text: str, model: type) -> None:
    assert isinstance(load(text).trust, model)


def _refused(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(text)
    return str(caught.value)


def test_weighted_elevated_without_human_is_refused() -> None:
    text = SEED_WEIGHTED.replace(
        "score: 0.8\n      requires_human_approval: true",
        "score: 0.8\n      requires_human_approval: false",
    )
    message = _refused(text)
    assert "trust.promotion_thresholds.standard_to_elevated" in message
    assert "always needs a human" in message


@pytest.mark.parametrize(
    "milestone",
    [
        "requires_human_approval: false\n      clean_history_days: 14",
        "auto_promote: true\n      clean_history_days: 14",
        "clean_history_days: 14",
    ],
)
def test_milestone_auto_promotion_to_elevated_is_refused(milestone: str) -> None:
    text = SEED_MILESTONE.replace(
        "requires_human_approval: true\n      clean_history_days: 14", milestone
    )
    assert "always needs a human" in _refused(text)


def test_per_category_elevated_and_deployment_need_a_human() -> None:
    to_elevated = SEED_PER_CATEGORY + (
        "    terminal:\n      standard_to_elevated:\n        tasks_completed: 100\n"
    )
    assert "always needs a human" in _refused(to_elevated)
    deployment = SEED_PER_CATEGORY.replace(
        "quality_score_min: 8.5\n        requires_human_approval: true", "quality_score_min: 8.5"
    )
    assert "deployment promotions always need a human" in _refused(deployment)


def test_trust_typos_are_named() -> None:
    assert "trust.weights" in _refused(
        SEED_WEIGHTED.replace("human_feedback: 0.2", "human_feedback: 0.3")
    )
    message = _refused(SEED_PER_CATEGORY.replace("git:", "gitt:", 1))
    assert "trust.initial_levels.gitt" in message
    assert "'git'" in message
    assert "sandboxed_to_elevated" in _refused(
        SEED_MILESTONE.replace("sandboxed_to_restricted", "sandboxed_to_elevated")
    )
    assert "trust.re_verification.decay_on_error_rate" in _refused(
        SEED_MILESTONE.replace("decay_on_error_rate: 0.15", "decay_on_error_rate: 15")
    )
