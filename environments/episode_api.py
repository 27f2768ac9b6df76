"""HTTP episode API for external trainers: create (reset), tools, call, diff, finish (reward)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, Throttled
from rest_framework.response import Response
from rest_framework.views import APIView

from aw_site.roles import VIEWER
from environments.episode_service import EpisodeLimitReached, EpisodeNotFound, episode_service
from environments.models import Environment
from tasks.models import Task
from tasks.privacy import agent_reward


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
    answer = serializers.JSONField(required=False, allow_null=True, default=None)


class EpisodeView(APIView):
    """Episodes change no shared data, so every role (viewers included) may run them."""

    required_roles = {None: VIEWER}


def _live(key: str, request):
    try:
        return episode_service().get(key, request.user.pk)
    except EpisodeNotFound as exc:
        raise NotFound(str(exc)) from exc


class EpisodeCollection(EpisodeView):
    """POST: start an episode of an environment (optionally for a task): its own state copy.

    The response carries the task's instruction and the tools, never its gold data.
    """

    def post(self, request):
        payload = CreateEpisodeSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        environment = payload.validated_data["environment"]
        task = payload.validated_data.get("task")
        try:
            live = episode_service().create(
                environment.package_path, request.user.pk, environment.pk, task and task.pk
            )
        except EpisodeLimitReached as exc:
            raise Throttled(detail=str(exc)) from exc
        body = {
            "episode": live.key,
            "environment": environment.pk,
            "task": task and task.pk,
            "instruction": task.instruction if task else None,
            "tools": live.episode.package.tools,
            "state_hash": live.episode.state_hash(),
        }
        return Response(body, status=status.HTTP_201_CREATED)


class EpisodeTools(EpisodeView):
    def get(self, request, key: str):
        return Response({"tools": _live(key, request).episode.package.tools})


class EpisodeCall(EpisodeView):
    """POST {tool, arguments}: run one tool in the sandbox; tool failures are 200 with ok=false."""

    def post(self, request, key: str):
        live = _live(key, request)
        payload = CallToolSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        result = live.episode.call_tool(
            payload.validated_data["tool"], payload.validated_data["arguments"]
        )
        live.calls.append(result.to_dict())
        return Response(result.to_dict())


class EpisodeDiff(EpisodeView):
    def get(self, request, key: str):
        episode = _live(key, request).episode
        return Response({"state_hash": episode.state_hash(), "diff": episode.state_diff()})


class EpisodeFinish(EpisodeView):
    """POST {answer}: close the episode; the reward breakdown when it ran a task."""

    def post(self, request, key: str):
        payload = FinishSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        live = _live(key, request)
        episode = live.episode
        final_hash, diff = episode.state_hash(), episode.state_diff()
        body = {"episode": key, "state_hash": final_hash, "diff": diff, "calls": len(live.calls)}
        if live.task_id:
            from tasks.records import spec_from_task
            from tasks.reward import score

            task = get_object_or_404(Task.objects.select_related("environment"), pk=live.task_id)
            trajectory = {
                "steps": [
                    {
                        "index": i,
                        "role": "assistant",
                        "tool_call": {"name": call["tool"], "arguments": call["arguments"]},
                        "tool_result": call["result"],
                        "error": call["error"],
                        "error_kind": call["error_kind"],
                    }
                    for i, call in enumerate(live.calls)
                ],
                "final_answer": payload.validated_data["answer"],
                "final_state_hash": final_hash,
                "state_diff": diff,
                "finished_reason": "answer",
            }
            # Reasons may quote the reference ("expected 1234, got ..."): the agent side gets
            # the component scores, total and success only, whatever the caller's role.
            body["reward"] = agent_reward(score(spec_from_task(task), trajectory).to_dict())
        episode_service().close(key, request.user.pk)
        return Response(body)

    def delete(self, request, key: str):
        try:
            episode_service().close(key, request.user.pk)
        except EpisodeNotFound as exc:
            raise NotFound(str(exc)) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)
