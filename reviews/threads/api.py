"""REST API for line comments: /api/v1/repos/{owner}/{name}/proposals/{number}/threads..."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from reviews import selectors
from reviews.api import AUTHENTICATED, _proposal
from reviews.models import COMMENT_MAX, Side, Thread
from reviews.threads import carry, services

_TEXT: dict[str, Any] = {"allow_blank": True, "trim_whitespace": False}


class ThreadCommentSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    author = serializers.CharField(source="author_name", read_only=True)
    body = serializers.CharField(max_length=COMMENT_MAX * 2, **_TEXT)
    created_at = serializers.DateTimeField(read_only=True)
    suggestion_applied_sha = serializers.CharField(read_only=True)


class PositionSerializer(serializers.Serializer):
    revision = serializers.IntegerField()
    path = serializers.CharField()
    line_start = serializers.IntegerField(allow_null=True)
    line_end = serializers.IntegerField(allow_null=True)
    outdated = serializers.BooleanField(
        help_text="Its lines changed or are gone: line_start/line_end are null."
    )


class ThreadSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    revision = serializers.IntegerField(source="revision.number")
    path = serializers.CharField()
    side = serializers.CharField()
    line_start = serializers.IntegerField()
    line_end = serializers.IntegerField()
    original_lines = serializers.ListField(
        source="context",
        child=serializers.ListField(),
        help_text="The anchored lines and 3 around them, as written on: [[line number, text], ...].",
    )
    resolved = serializers.BooleanField()
    resolved_by = serializers.CharField(source="resolved_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    comments = ThreadCommentSerializer(many=True, source="comments.all")
    latest = serializers.SerializerMethodField(help_text="Where the thread is on the latest revision.")

    @extend_schema_field(PositionSerializer(allow_null=True))
    def get_latest(self, thread) -> dict | None:
        latest, placed = self.context.get("latest"), self.context.get("positions", {})
        position = placed.get(thread.pk)
        if latest is None or position is None:
            return None
        row = {
            "revision": latest.number,
            "path": position.path,
            "line_start": position.start,
            "line_end": position.end,
            "outdated": not position.current,
        }
        return PositionSerializer(row).data  # type: ignore[return-value]  # a ReturnDict


class ThreadCreateSerializer(serializers.Serializer):
    revision = serializers.IntegerField(required=False, help_text="Default: the latest revision.")
    path = serializers.CharField(max_length=services.MAX_PATH * 2, trim_whitespace=False)
    side = serializers.ChoiceField(choices=Side.values, default=Side.NEW)
    line_start = serializers.IntegerField()
    line_end = serializers.IntegerField(required=False)
    body = serializers.CharField(max_length=COMMENT_MAX * 2, **_TEXT)


class ThreadUpdateSerializer(serializers.Serializer):
    resolved = serializers.BooleanField()


def _threads(proposal):
    return proposal.threads.select_related("revision", "resolved_by").prefetch_related("comments")


def _context(proposal, threads) -> dict:
    latest = selectors.latest_revision(proposal)
    placed = carry.positions(proposal.repository.disk_path, threads, latest) if latest and threads else {}
    return {"latest": latest, "positions": placed}


def _thread(proposal, thread: int) -> Thread:
    found = _threads(proposal).filter(pk=thread).first()
    if found is None:
        raise NotFound("Thread not found.")
    return found


class ThreadListView(APIView):
    def get_permissions(self):
        return [p() for p in AUTHENTICATED] if self.request.method == "POST" else super().get_permissions()

    @extend_schema(operation_id="repos_proposals_threads_list", responses=ThreadSerializer(many=True))
    def get(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        threads = list(_threads(proposal))
        return Response(ThreadSerializer(threads, many=True, context=_context(proposal, threads)).data)

    @extend_schema(request=ThreadCreateSerializer, responses={201: ThreadSerializer})
    def post(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        data = ThreadCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        wanted = values.pop("revision", None)
        revision = (
            selectors.latest_revision(proposal)
            if wanted is None
            else selectors.revision_by_number(proposal, wanted)
        )
        if revision is None:
            raise NotFound("That revision is not one of this proposal's.")
        values.setdefault("line_end", values["line_start"])
        thread = services.thread_create(proposal=proposal, user=request.user, revision=revision, **values)
        thread = _thread(proposal, thread.pk)
        body = ThreadSerializer(thread, context=_context(proposal, [thread])).data
        return Response(body, status=status.HTTP_201_CREATED)


class ThreadDetailView(APIView):
    def get_permissions(self):
        return [p() for p in AUTHENTICATED] if self.request.method == "PATCH" else super().get_permissions()

    @extend_schema(responses=ThreadSerializer)
    def get(self, request, owner: str, name: str, number: int, thread: int):
        proposal = _proposal(request, owner, name, number)
        found = _thread(proposal, thread)
        return Response(ThreadSerializer(found, context=_context(proposal, [found])).data)

    @extend_schema(request=ThreadUpdateSerializer, responses=ThreadSerializer)
    def patch(self, request, owner: str, name: str, number: int, thread: int):
        proposal = _proposal(request, owner, name, number)
        found = _thread(proposal, thread)
        data = ThreadUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.thread_resolve(thread=found, user=request.user, resolved=data.validated_data["resolved"])
        found = _thread(proposal, thread)
        return Response(ThreadSerializer(found, context=_context(proposal, [found])).data)


class ThreadReplyView(APIView):
    permission_classes = AUTHENTICATED

    @extend_schema(request=ThreadCommentSerializer, responses={201: ThreadCommentSerializer})
    def post(self, request, owner: str, name: str, number: int, thread: int):
        proposal = _proposal(request, owner, name, number)
        found = _thread(proposal, thread)
        data = ThreadCommentSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        comment = services.thread_reply(thread=found, user=request.user, body=data.validated_data["body"])
        return Response(ThreadCommentSerializer(comment).data, status=status.HTTP_201_CREATED)


class ThreadCommentView(APIView):
    permission_classes = AUTHENTICATED

    def _comment(self, request, owner, name, number, thread, comment):
        proposal = _proposal(request, owner, name, number)
        found = (
            _thread(proposal, thread).comments.filter(pk=comment).select_related("proposal", "thread").first()
        )
        if found is None:
            raise NotFound("Comment not found.")
        return found

    @extend_schema(request=ThreadCommentSerializer, responses=ThreadCommentSerializer)
    def patch(self, request, owner: str, name: str, number: int, thread: int, comment: int):
        """Edit your own line comment (409 once its suggestion was applied)."""
        found = self._comment(request, owner, name, number, thread, comment)
        data = ThreadCommentSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        edited = services.comment_edit(comment=found, user=request.user, body=data.validated_data["body"])
        return Response(ThreadCommentSerializer(edited).data)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request, owner: str, name: str, number: int, thread: int, comment: int):
        """Delete your own line comment; a thread left without comments goes with it."""
        found = self._comment(request, owner, name, number, thread, comment)
        services.comment_delete(comment=found, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
