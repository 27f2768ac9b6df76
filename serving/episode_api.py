"""HTTP episode API for external trainers: create (reset), tools, call, diff, finish (reward).

A task episode also offers ``submit_answer`` (its schema from the task's answer contract): the
call is checked against the contract and recorded, never sent to the sandbox; ``finish`` scores
the answer given in its body, else the recorded submission, through ``finish_episode`` and
``tasks.reward.score``.

A task episode offers the task's own tools only (``tasks.tool_subset.offered_tools``: the gold
tools and distractors synthesis chose); a call to any other tool is answered ok=false,
``unknown_tool``, and never reaches the sandbox. An environment-only episode offers every tool.
"""

from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, Throttled
from rest_framework.response import Response
from rest_framework.views import APIView

from aw_site.roles import VIEWER
from environments.models import Environment
from environments.runtime.episode import ToolCallResult
from serving.episode_service import EpisodeLimitReached, EpisodeNotFound, episode_service
from tasks.answer_contract import SUBMIT_ANSWER
from tasks.models import Task
from tasks.privacy import HIDDEN_NOTE, agent_reward, hides_answers


class CreateEpisodeSerializer(serializers.Serializer):
    environment = serializers.PrimaryKeyRelatedField(
        queryset=Environment.objects.filter(status=Environment.Status.VERIFIED), required=False
    )
    task = serializers.PrimaryKeyRelatedField(
        queryset=Task.objects.select_related("environment"), required=False
    )

    def validate(self, attrs):
        if not attrs.get("environment") and not attrs.get("task"):
            raise serializers.ValidationError("give a verified environment or a task")
        task = attrs.get("task")
        if task and attrs.get("environment") and task.environment_id != attrs["environment"].pk:
            raise serializers.ValidationError({"task": "the task belongs to another environment"})
        if task:
            attrs["environment"] = task.environment
        return attrs


class CallToolSerializer(serializers.Serializer):
    tool = serializers.CharField(max_length=120)
    arguments = serializers.DictField(required=False, default=dict)


class FinishSerializer(serializers.Serializer):
    answer = serializers.JSONField(required=False, allow_null=True)


class EpisodeView(APIView):
    """Episodes change no shared data, so every role (viewers included) may run them."""

    required_roles = {None: VIEWER}


def _live(key: str, request):
    try:
        return episode_service().get(key, request.user.pk)
    except EpisodeNotFound as exc:
        raise NotFound(str(exc)) from exc


def _tools(live) -> list[dict]:
    """The package's tools; in a task episode, the task's offered tools and ``submit_answer``."""
    tools = live.episode.package.tools
    return live.run.tools(tools) if live.run is not None else tools


def _suggested_prompt(spec, package) -> list[dict] | None:
    """The opening messages a task's agent is shown everywhere (``tasks.agent_view``): the
    system prompt and the instruction, for a client that wants to train or evaluate on exactly
    what our own rollouts see. None for an episode with no task."""
    if spec is None:
        return None
    from tasks.agent_view import agent_view
    from tasks.synthesis.environment_view import package_manifest

    return agent_view(spec, package_manifest(package)).messages()


class EpisodeCollection(EpisodeView):
    """POST: start an episode of an environment (optionally for a task): its own state copy.

    The response carries the task's instruction and the tools, never its gold data.
    """

    def post(self, request):
        payload = CreateEpisodeSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        environment = payload.validated_data["environment"]
        task = payload.validated_data.get("task")
        spec = None
        if task:
            from tasks.records import spec_from_task

            spec = spec_from_task(task)
        try:
            live = episode_service().create(
                environment.package_path, request.user.pk, environment.pk, task and task.pk, spec
            )
        except EpisodeLimitReached as exc:
            raise Throttled(detail=str(exc)) from exc
        body = {
            "episode": live.key,
            "environment": environment.pk,
            "task": task and task.pk,
            "instruction": task.instruction if task else None,
            "answer_contract": live.run.contract.to_dict() if live.run else None,
            "tools": _tools(live),
            "prompt": _suggested_prompt(spec, live.episode.package),
            "state_hash": live.episode.state_hash(),
        }
        return Response(body, status=status.HTTP_201_CREATED)


class EpisodeTools(EpisodeView):
    def get(self, request, key: str):
        return Response({"tools": _tools(_live(key, request))})


class EpisodeCall(EpisodeView):
    """POST {tool, arguments}: run one tool in the sandbox; tool failures are 200 with ok=false.

    In a task episode ``submit_answer`` is checked against the answer contract and recorded
    (the latest valid one counts); a malformed one is ok=false, ``invalid_arguments``; a tool
    the task does not offer is ok=false, ``unknown_tool`` (recorded as a failed call, not run).
    """

    def post(self, request, key: str):
        live = _live(key, request)
        payload = CallToolSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        tool, arguments = payload.validated_data["tool"], payload.validated_data["arguments"]
        if tool == SUBMIT_ANSWER and live.run is not None:
            return Response(_submit(live, arguments))
        refusal = live.run and live.run.refusal(tool, live.episode.package.tools)
        if refusal:
            result = ToolCallResult(tool, arguments, False, None, refusal, "unknown_tool")
        else:
            result = live.episode.call_tool(tool, arguments)
        live.calls.append(result.to_dict())
        return Response(result.to_dict())


def _submit(live, arguments: dict) -> dict:
    submission = live.run.submit(arguments)
    body = {"tool": SUBMIT_ANSWER, "arguments": arguments, "ok": submission.valid}
    if submission.valid:
        return {
            **body,
            "result": {"recorded": live.run.submission, "read_as": submission.value},
            "error": None,
            "error_kind": None,
        }
    problem = submission.problem or "the answer cannot be read"
    return {
        **body,
        "result": None,
        "error": f"invalid arguments for {SUBMIT_ANSWER}: {problem}",
        "error_kind": "invalid_arguments",
    }


class EpisodeDiff(EpisodeView):
    def get(self, request, key: str):
        episode = _live(key, request).episode
        return Response({"state_hash": episode.state_hash(), "diff": episode.state_diff()})


class EpisodeFinish(EpisodeView):
    """POST {answer?}: close the episode; the reward breakdown when it ran a task.

    The answer is the body's ``answer`` when the key is there (a value, or a final message
    with a JSON block, read as the rollout loop reads one), else the episode's recorded
    submission, else none. On an evaluation (arena or held-out) task a viewer gets no reward:
    replaying the task with guess after guess would turn ``success`` into an answer oracle.
    """

    def post(self, request, key: str):
        payload = FinishSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        live = _live(key, request)
        try:
            body = _finish(key, live, payload.validated_data)
        finally:
            episode_service().close(key, request.user.pk)
        if live.task_id and "reward" in body:
            split = Task.objects.filter(pk=live.task_id).values_list("split", flat=True).first()
            if hides_answers(request.user, split):
                body["reward"] = None
                body["reward_hidden"] = HIDDEN_NOTE
        return Response(body)

    def delete(self, request, key: str):
        try:
            episode_service().close(key, request.user.pk)
        except EpisodeNotFound as exc:
            raise NotFound(str(exc)) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)


def _finish(key: str, live, data: dict) -> dict:
    episode = live.episode
    if live.run is None:
        final_hash, diff = episode.state_hash(), episode.state_diff()
        body = {"episode": key, "state_hash": final_hash, "diff": diff}
    else:
        answered = "answer" in data
        outcome, breakdown, trajectory = live.run.finish(
            episode, data.get("answer"), answered=answered
        )
        body = {
            "episode": key,
            "state_hash": outcome.final_state_hash,
            "diff": outcome.state_diff,
            "answer": trajectory.final_answer,
            "answer_source": (
                "finish" if answered else "submit_answer" if live.run.submission else None
            ),
            # Reasons may quote what the run got wrong: the agent side gets the component
            # scores, total, success and gate only, whatever the caller's role.
            "reward": agent_reward(breakdown.to_dict()),
        }
    body["calls"] = len(live.calls)
    return body
