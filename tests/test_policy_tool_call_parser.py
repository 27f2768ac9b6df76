"""Parsing Hermes / Qwen ``<tool_call>`` text into tool calls, and saying what is wrong."""

from training.policies.tool_call_parser import (
    parse_arguments,
    parse_assistant_text,
    render_tool_call,
)


def test_single_call_with_content_and_end_marker():
    text = 'Let me look.\n<tool_call>\n{"name": "get_book", "arguments": {"book_id": 3}}\n</tool_call><|im_end|>'
    parsed = parse_assistant_text(text)
    assert parsed.content == "Let me look."
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("get_book", {"book_id": 3})]
    assert parsed.format_error is None


def test_several_calls_in_one_turn():
    text = render_tool_call("a", {"x": 1}) + "\n" + render_tool_call("b", {})
    parsed = parse_assistant_text(text)
    assert [c.name for c in parsed.tool_calls] == ["a", "b"]
    assert parsed.content == ""


def test_plain_text_is_a_final_answer():
    parsed = parse_assistant_text("The title is Solaris.<|im_end|>garbage after end")
    assert parsed.tool_calls == []
    assert parsed.content == "The title is Solaris."


def test_bad_json_is_a_format_error():
    parsed = parse_assistant_text(
        '<tool_call>\n{"name": "get_book", "arguments": {book_id: 3}\n</tool_call>'
    )
    assert parsed.tool_calls[0].name is None
    assert "not valid JSON" in parsed.format_error


def test_missing_name_is_a_format_error():
    parsed = parse_assistant_text('<tool_call>{"arguments": {"book_id": 3}}</tool_call>')
    assert parsed.format_error == "tool call has no function name"


def test_arguments_must_be_an_object():
    parsed = parse_assistant_text('<tool_call>{"name": "get_book", "arguments": [3]}</tool_call>')
    assert "must be a JSON object" in parsed.format_error


def test_string_encoded_arguments_are_decoded():
    parsed = parse_assistant_text(
        '<tool_call>{"name": "get_book", "arguments": "{\\"book_id\\": 3}"}</tool_call>'
    )
    assert parsed.tool_calls[0].arguments == {"book_id": 3}


def test_unclosed_call_is_reported_not_taken_for_an_answer():
    parsed = parse_assistant_text('<tool_call>\n{"name": "get_book", "argu')
    assert parsed.format_error == "tool call is not closed (</tool_call>)"


def test_openai_arguments_string_validation():
    assert parse_arguments("get_book", '{"book_id": 1}', "raw").arguments == {"book_id": 1}
    assert parse_arguments("get_book", "", "raw").arguments == {}
    assert "not valid JSON" in parse_arguments("get_book", "{oops", "raw").error
    assert parse_arguments(None, "{}", "raw").error == "tool call has no function name"
