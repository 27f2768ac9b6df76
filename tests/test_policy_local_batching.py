"""The local HF policy at speed: concurrent episodes share left-padded batches whose greedy
turns equal unbatched generation, and a checkpoint is loaded once per process."""

from __future__ import annotations

import os
import threading

import pytest
import torch

from environments.runtime import SandboxPool, load_package
from tasks.synthesis.task_spec import TaskSpec
from tests.support.sample_package import TOOLS, build_sample_package
from training.policies import LocalHFPolicy, PolicyError
from training.policies.local_hf import cached_policy, release_cached_policies
from training.policies.tiny_model import build_policy_dir, corpus_from_environments
from training.rollout import rollout_many

QUESTIONS = [
    "Title of book 1?",
    "Who wrote Dune?",
    "List every book in stock please",
    "x",
    "Order two copies of Solaris for Ada",
    "get_book 3",
    "price?",
    "How many books are there in the store today?",
]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    corpus = corpus_from_environments([{"name": "bookstore", "tools": TOOLS}])
    return build_policy_dir(tmp_path_factory.mktemp("tiny") / "model", corpus, seed=0)


@pytest.fixture(scope="module")
def shaped(tiny_dir):
    """The tiny model with larger random weights, so greedy turns differ from prompt to prompt,
    and a stronger end-of-turn token, so some turns stop early and others run to the limit."""
    policy = LocalHFPolicy.from_pretrained(tiny_dir, device="cpu")
    torch.manual_seed(0)
    with torch.no_grad():
        for parameter in policy.model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0, 0.3)
        eos = policy.tokenizer.eos_token_id
        policy.model.get_output_embeddings().weight[eos] *= 2.5
    return policy.model, policy.tokenizer


def conversation(question: str) -> list[dict]:
    return [{"role": "system", "content": "Be brief."}, {"role": "user", "content": question}]


def fields(turn) -> tuple:
    calls = [(c.name, c.arguments, c.error) for c in turn.tool_calls]
    return turn.content, turn.raw_text, turn.tokens_in, turn.tokens_out, turn.format_error, calls


def test_batched_turns_equal_unbatched_greedy_turns(shaped):
    model, tokenizer = shaped
    one_by_one = LocalHFPolicy(model, tokenizer, max_new_tokens=16, max_batch_size=1)
    expected = [fields(one_by_one.act(conversation(q), TOOLS[:1])) for q in QUESTIONS]
    assert one_by_one.batch_sizes == {1: len(QUESTIONS)}
    assert len({e[1] for e in expected}) == len(QUESTIONS)  # the turns really differ
    assert len({e[3] for e in expected}) > 1  # some stop at the end-of-turn token

    batched = LocalHFPolicy(model, tokenizer, max_new_tokens=16, batch_wait_ms=2000)
    results: list = [None] * len(QUESTIONS)
    start = threading.Barrier(len(QUESTIONS))

    def episode(index: int) -> None:
        start.wait()
        results[index] = fields(batched.act(conversation(QUESTIONS[index]), TOOLS[:1]))

    threads = [threading.Thread(target=episode, args=(i,)) for i in range(len(QUESTIONS))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert batched.batch_sizes == {8: 1}  # a full batch runs without waiting out the 2 s
    assert results == expected


def test_concurrent_episodes_are_generated_in_batches(shaped, tmp_path):
    model, tokenizer = shaped
    policy = LocalHFPolicy(model, tokenizer, max_new_tokens=8, batch_wait_ms=20)
    package = load_package(build_sample_package(tmp_path))
    tasks = [
        TaskSpec(
            kind="graph",
            environment="bookstore",
            instruction=QUESTIONS[i],
            gold_chain=[{"tool": "get_book", "arguments": {"book_id": 1}}],
            reference_answer="Dune",
            signature=f"batch-{i}",
        )
        for i in range(8)
    ]
    with SandboxPool(workers=2) as pool:
        trajectories = rollout_many(policy, tasks, {"bookstore": package}, 8, pool)
    assert len(trajectories) == 8
    assert max(policy.batch_sizes) > 1, policy.batch_sizes
    turns = sum(size * count for size, count in policy.batch_sizes.items())
    assert turns >= 8


def test_a_failed_generation_fails_every_caller_of_its_batch(shaped, monkeypatch):
    model, tokenizer = shaped
    policy = LocalHFPolicy(model, tokenizer, max_new_tokens=4, batch_wait_ms=2000)

    def broken(prompts):
        raise RuntimeError("CUDA error: device-side assert triggered")

    monkeypatch.setattr(policy, "generate_batch", broken)
    errors: list = []

    def episode() -> None:
        try:
            policy.act(conversation("hi"), [])
        except PolicyError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=episode) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == ["generation failed: CUDA error: device-side assert triggered"] * 8


def test_a_checkpoint_is_loaded_once_until_its_files_change(tiny_dir, monkeypatch):
    monkeypatch.setenv("AW_POLICY_DEVICE", "cpu")
    release_cached_policies()
    try:
        first = cached_policy(tiny_dir, max_new_tokens=8)
        assert cached_policy(str(tiny_dir), max_new_tokens=8) is first
        config = tiny_dir / "config.json"
        stat = config.stat()
        os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # rewritten
        reloaded = cached_policy(tiny_dir, max_new_tokens=8)
        assert reloaded is not first and reloaded.device == "cpu"
    finally:
        release_cached_policies()
