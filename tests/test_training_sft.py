"""SFT warm-up with TRL's SFTTrainer on gold conversations rendered by the one agent view:
only the agent's own turns are trained (tool calls, the answer, their end-of-turn token), an
over-long conversation keeps its system prompt and instruction (cut after a whole assistant turn,
or dropped and counted), the loss falls, LoRA saves a merged plain model, and no NaN reaches the
summary or the weights."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from tasks.agent_view import (
    AGENT_RULES,
    agent_view,
    answer_text,
    assistant_call_message,
    render_tool_result,
    tool_message,
)
from tests.support.gold_tasks import READ_CONTRACT, WRITE_CONTRACT
from tests.support.sample_package import TOOLS
from training.grpo.config import TrainingConfig
from training.grpo.lora import peft_config
from training.grpo.sft import (
    GENERATION_MARKERS,
    PREFIX_RENDER,
    SkipNonFiniteSteps,
    encode_by_prefixes,
    encode_with_template,
    sft_dataset,
    sft_trainer,
    sft_warmup,
    training_chat_template,
)
from training.policies.local_hf import to_template_messages
from training.policies.tiny_model import build_tiny_policy, qwen_chat_template
from training.service import _jsonable

MANIFEST = {
    "name": "bookstore",
    "title": "Bookstore",
    "description": "A small bookstore: authors, books and purchases.",
    "tools": TOOLS,
}
DUNE = {"id": 1, "title": "Dune", "author_id": 1, "price": 9.99, "stock": 5}
SOLARIS = {"id": 4, "title": "Solaris", "author_id": 3, "price": 11.25, "stock": 2}


def gold_conversation(instruction, contract, calls, answer, description=None):
    """A gold trajectory's conversation, every message rendered by tasks/agent_view.py."""
    task = {
        "instruction": instruction,
        "tools": sorted({name for name, _, _ in calls}),
        "answer_contract": contract.to_dict(),
    }
    manifest = MANIFEST if description is None else {**MANIFEST, "description": description}
    view = agent_view(task, manifest)
    messages = view.messages()
    for index, (name, arguments, result) in enumerate(calls):
        messages.append(assistant_call_message("", [(f"call_{index}", name, arguments)]))
        messages.append(tool_message(f"call_{index}", name, render_tool_result(True, result)))
    messages.append({"role": "assistant", "content": answer_text(answer)})
    return {"messages": messages, "tools": view.tools}


READ = gold_conversation(
    "What is the title of book 1? " + READ_CONTRACT.describe(),
    READ_CONTRACT,
    [("get_book", {"book_id": 1}, DUNE)],
    "Dune",
)
WRITE = gold_conversation(
    "Solaris (book 4) is sold out: set its stock to 0, then report its price. "
    + WRITE_CONTRACT.describe(),
    WRITE_CONTRACT,
    [
        ("get_book", {"book_id": 4}, SOLARIS),
        ("update_stock", {"book_id": 4, "stock": 0}, {"book_id": 4, "stock": 0}),
    ],
    11.25,
)
SEARCH = gold_conversation(
    "Which book titled like 'Messiah' costs at most 20? " + READ_CONTRACT.describe(),
    READ_CONTRACT,
    [("search_books", {"title_contains": "Messiah", "max_price": 20}, [DUNE])],
    "Dune Messiah",
)
# What the agent must learn to write in WRITE, turn by turn, end-of-turn token included.
WRITE_TURNS = [
    '<tool_call>\n{"name": "get_book", "arguments": {"book_id": 4}}\n</tool_call><|im_end|>\n',
    '<tool_call>\n{"name": "update_stock", "arguments": {"book_id": 4, "stock": 0}}\n'
    "</tool_call><|im_end|>\n",
    '{"answer": 11.25}<|im_end|>\n',
]


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    return build_tiny_policy(tmp_path_factory.mktemp("sft") / "tiny", [MANIFEST], [])


@pytest.fixture
def tokenizer(policy_dir):
    return AutoTokenizer.from_pretrained(policy_dir)


def quick_config(**overrides) -> TrainingConfig:
    values = {"use_cpu": True, "sft_epochs": 1, "sft_batch_size": 3, "seed": 0}
    return TrainingConfig(**{**values, **overrides})


def trained_runs(tokenizer, input_ids, trained):
    """The text of each maximal run of trained tokens."""
    runs, current = [], []
    for token, on in zip(input_ids, trained, strict=True):
        if on:
            current.append(token)
        elif current:
            runs.append(tokenizer.decode(current))
            current = []
    if current:
        runs.append(tokenizer.decode(current))
    return runs


def test_only_the_agents_turns_are_trained(policy_dir, tokenizer, tmp_path):
    assert training_chat_template(tokenizer) != tokenizer.chat_template  # TRL's training copy
    trainer, info = sft_trainer(policy_dir, tokenizer, [READ, WRITE], quick_config(), tmp_path)
    assert (info["masking"], info["format"], info["examples"]) == (
        GENERATION_MARKERS,
        "messages",
        2,
    )
    row = trainer.train_dataset[1]
    labels = row["labels"]
    trained = [label != -100 for label in labels]
    # Every assistant turn, tool calls and answer with their end-of-turn token, and nothing else:
    # not the system prompt, the tool list, the instruction or the tool results.
    assert trained_runs(tokenizer, row["input_ids"], trained) == ["\n" + t for t in WRITE_TURNS]
    untrained = tokenizer.decode(
        [t for t, on in zip(row["input_ids"], trained, strict=True) if not on]
    )
    assert AGENT_RULES in untrained and "Solaris (book 4) is sold out" in untrained
    assert '"title": "Solaris"' in untrained and "<tools>" in untrained
    assert all(
        label in (-100, token) for label, token in zip(labels, row["input_ids"], strict=True)
    )
    # The training template renders the very text the policy is prompted with at inference.
    messages = to_template_messages(WRITE["messages"])
    assert tokenizer.decode(row["input_ids"]) == tokenizer.apply_chat_template(
        messages, tools=WRITE["tools"], tokenize=False
    )


def test_a_template_trl_does_not_know_is_masked_by_rendering_prefixes(
    policy_dir, tokenizer, tmp_path
):
    tokenizer.chat_template = "{#- a researcher's own copy -#}\n" + qwen_chat_template()
    assert training_chat_template(tokenizer) is None
    trainer, info = sft_trainer(policy_dir, tokenizer, [READ, WRITE], quick_config(), tmp_path)
    assert (info["masking"], info["format"]) == (PREFIX_RENDER, "tokens")
    row = trainer.train_dataset[1]  # pre-tokenized: SFTTrainer folds assistant_masks into labels
    # The spans start after the generation prompt ("<|im_start|>assistant\n"), which the policy
    # is given at inference; the rest is the same as with generation markers.
    trained = [label != -100 for label in row["labels"]]
    assert trained_runs(tokenizer, row["input_ids"], trained) == WRITE_TURNS

    tokenizer.chat_template = (
        "{% for m in messages %}{% if loop.last %}LAST {% endif %}{{ m.content }}\n{% endfor %}"
    )
    with pytest.raises(ValueError, match="not prefix-preserving"):
        encode_by_prefixes(tokenizer, to_template_messages(WRITE["messages"]), [])


def test_an_over_long_conversation_keeps_its_system_prompt_and_instruction(tokenizer):
    template = training_chat_template(tokenizer)
    messages = to_template_messages(WRITE["messages"])

    def length(upto):
        return len(encode_with_template(tokenizer, messages[:upto], WRITE["tools"], template)[0])

    first_turn, second_turn = length(3), length(5)  # system, user, first call (+ result, call)
    huge = gold_conversation(
        "What is the title of book 1?",
        READ_CONTRACT,
        [("get_book", {"book_id": 1}, DUNE)],
        "Dune",
        description="A bookstore. " * 400,  # the system prompt alone overflows
    )
    dataset, info = sft_dataset(tokenizer, [WRITE, huge, READ], max_length=second_turn - 1)
    assert (info["examples"], info["truncated"], info["dropped"]) == (2, 1, 1)
    kept = dataset[0]["messages"]
    assert kept == messages[:3]  # system prompt and instruction whole, cut after a whole turn
    ids, masks = encode_with_template(tokenizer, kept, WRITE["tools"], template)
    assert len(ids) == first_turn and trained_runs(tokenizer, ids, masks) == ["\n" + WRITE_TURNS[0]]
    assert dataset[1]["messages"] == to_template_messages(READ["messages"])  # fits: untouched


def test_float_arguments_json_storage_would_round_go_pre_tokenized(tokenizer):
    precise = gold_conversation(
        "Which books cost at most 12.345678901234567? " + READ_CONTRACT.describe(),
        READ_CONTRACT,
        [("search_books", {"max_price": 12.345678901234567}, [SOLARIS])],
        "Solaris",
    )
    dataset, info = sft_dataset(tokenizer, [READ, precise], max_length=4096)
    assert (info["masking"], info["format"]) == (GENERATION_MARKERS, "tokens")
    row = dataset[1]
    runs = trained_runs(tokenizer, row["input_ids"], row["assistant_masks"])
    assert '"arguments": {"max_price": 12.345678901234567}' in runs[0]


@pytest.mark.timeout(60)
def test_loss_falls_over_a_few_epochs_and_the_saved_model_loads(policy_dir, tokenizer, tmp_path):
    model = AutoModelForCausalLM.from_pretrained(policy_dir)
    config = quick_config(sft_epochs=4)
    summary = sft_warmup(
        model, tokenizer, [READ, WRITE, SEARCH], config, tmp_path / "run", tmp_path / "sft"
    )
    assert summary["steps"] == 4 and summary["examples"] == 3 and summary["skipped_steps"] == 0
    assert summary["loss_last"] < summary["loss_first"]
    assert summary["lora"] is False and summary["tokens_per_s"] > 0
    assert _jsonable(summary) == summary  # no NaN or infinity anywhere
    assert all(torch.isfinite(p).all() for p in model.parameters())
    saved = AutoModelForCausalLM.from_pretrained(tmp_path / "sft")
    assert saved.config.use_cache  # Trainer switched it off while training
    assert torch.equal(saved.model.embed_tokens.weight, model.model.embed_tokens.weight)
    # The policy keeps its own chat template (TRL's training copy is only used to train).
    assert AutoTokenizer.from_pretrained(tmp_path / "sft").chat_template == qwen_chat_template()


@pytest.mark.timeout(60)
def test_lora_trains_an_adapter_and_saves_it_merged(policy_dir, tokenizer, tmp_path):
    config = quick_config(
        sft_epochs=2, sft_learning_rate=1e-2, use_lora=True, lora_r=4, lora_alpha=8
    )
    lora = peft_config(config)
    assert (lora.r, lora.lora_alpha, lora.target_modules) == (4, 8, "all-linear")
    assert peft_config(quick_config()) is None
    summary = sft_warmup(policy_dir, tokenizer, [READ, WRITE], config, tmp_path, tmp_path / "sft")
    assert summary["lora"] is True and summary["steps"] == 2
    assert math.isfinite(summary["loss_first"]) and math.isfinite(summary["loss_last"])
    base = AutoModelForCausalLM.from_pretrained(policy_dir)
    saved = AutoModelForCausalLM.from_pretrained(tmp_path / "sft")  # no peft needed to load
    names = set(saved.state_dict())
    assert names == set(base.state_dict()) and not any("lora" in n for n in names)
    layer, base_layer = saved.model.layers[0].self_attn, base.model.layers[0].self_attn
    assert not torch.equal(layer.q_proj.weight, base_layer.q_proj.weight)  # adapter merged in


def test_nothing_that_fits_leaves_the_model_as_it_was(policy_dir, tokenizer, tmp_path):
    summary = sft_warmup(
        str(policy_dir),
        tokenizer,
        [READ],
        quick_config(sft_max_length=16),
        tmp_path,
        tmp_path / "s",
    )
    assert (summary["steps"], summary["examples"], summary["dropped"]) == (0, 0, 1)
    assert summary["loss_first"] is None
    assert AutoModelForCausalLM.from_pretrained(tmp_path / "s").config.hidden_size == 64


def test_a_step_with_non_finite_gradients_is_skipped():
    layer = torch.nn.Linear(2, 2)
    layer.weight.grad = torch.tensor([[float("nan"), 0.0], [0.0, 0.0]])
    layer.bias.grad = torch.zeros(2)
    guard = SkipNonFiniteSteps()
    guard.on_pre_optimizer_step(None, None, None, model=layer)
    assert guard.skipped == 1 and layer.weight.grad is None and layer.bias.grad is None
    layer.weight.grad, layer.bias.grad = torch.ones(2, 2), torch.ones(2)
    guard.on_pre_optimizer_step(None, None, None, model=layer)
    assert guard.skipped == 1 and torch.equal(layer.weight.grad, torch.ones(2, 2))


def test_metrics_never_carry_nan_or_infinity():
    values = {"loss": float("nan"), "reward": torch.tensor(float("inf")), "steps": 3, "ok": 0.5}
    assert _jsonable(values) == {"loss": None, "reward": None, "steps": 3, "ok": 0.5}
