"""Policies: anything that maps a chat history and tool schemas to the next assistant turn."""

from training.policies.base import Policy, PolicyError, PolicyTurn
from training.policies.local_hf import LocalHFPolicy
from training.policies.openai_compatible import OpenAICompatiblePolicy
from training.policies.tool_call_parser import ParsedToolCall, parse_assistant_text

__all__ = [
    "LocalHFPolicy",
    "OpenAICompatiblePolicy",
    "ParsedToolCall",
    "Policy",
    "PolicyError",
    "PolicyTurn",
    "parse_assistant_text",
]
