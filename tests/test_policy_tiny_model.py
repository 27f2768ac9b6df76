"""The tiny local policy: built from scratch, saved, loaded back the way checkpoints load."""

from __future__ import annotations

import json

from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.support.sample_package import TOOLS
from training.policies import LocalHFPolicy
from training.policies.tiny_model import build_tiny_policy
from training.policies.tool_call_parser import render_tool_call


def test_build_save_and_reload_through_auto_classes(tmp_path):
    manifest = {"name": "bookstore", "description": "Books.", "tools": TOOLS}
    path = build_tiny_policy(tmp_path / "tiny", [manifest], [])
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {
        p.name for p in path.iterdir()
    }

    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    config = json.loads((path / "config.json").read_text())
    assert config["model_type"] == "qwen2"
    assert (config["hidden_size"], config["num_hidden_layers"]) == (64, 2)
    assert model.config.vocab_size == len(tokenizer)

    # Tool calls survive a tokenizer round trip, and the template renders tools and calls.
    call = render_tool_call("get_book", {"book_id": 3})
    assert tokenizer.decode(tokenizer(call)["input_ids"]) == call
    messages = [
        {"role": "user", "content": "Title of book 3?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "get_book", "arguments": {"book_id": 3}}}
            ],
        },
        {"role": "tool", "name": "get_book", "content": '{"title": "x"}'},
    ]
    text = tokenizer.apply_chat_template(
        messages, tools=TOOLS, tokenize=False, add_generation_prompt=True
    )
    assert "<tools>" in text and '"name": "get_book"' in text
    assert call in text and "<tool_response>" in text
    assert text.endswith("<|im_start|>assistant\n")


def test_untrained_policy_turns_never_crash(tmp_path):
    path = build_tiny_policy(tmp_path / "tiny", [{"name": "b", "tools": TOOLS}], [])
    policy = LocalHFPolicy.from_pretrained(path, max_new_tokens=24, temperature=1.0)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    for _ in range(3):
        turn = policy.act(messages, TOOLS)
        assert turn.tokens_out <= 24 and turn.tokens_in > 0
        assert turn.format_error is not None or isinstance(turn.content, str)
