"""REST API for change proposals: list, open, edit, comment, approve, merge, revisions."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from gitcore.oids import is_printed_id
from repos.api.access import repo_or_404
from repos.api.pagination import Pagination, paginated
from repos.api.permissions import Authenticated, TokenScope
from repos.hooks import refspace
from repos.visibility import view_for
from reviews import merge, selectors, services
from reviews.models import COMMENT_MAX, DESCRIPTION_MAX, MergeStrategy, Proposal, ProposalState

AUTHENTICATED = [Authenticated, TokenScope]
# Generous input caps: the services give the precise message; these stop absurd bodies early.
_TEXT: dict[str, Any] = {"allow_blank": True, "trim_whitespace": False}


class RevisionSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    head_sha = serializers.CharField()
    base_sha = serializers.CharField()
    push_id = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()


class ApprovalSerializer(serializers.Serializer):
    username = serializers.CharField()
    head_sha = serializers.CharField()
    revision = serializers.IntegerField(allow_null=True)
    stale = serializers.BooleanField(help_text="Given to an earlier head than the current one.")


class ProposalSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    title = serializers.CharField()
    description = serializers.CharField()
    state = serializers.CharField()
    author = serializers.CharField(source="author.username")
    source_ref = serializers.CharField()
    target_branch = serializers.CharField()
    head_sha = serializers.SerializerMethodField()
    base_sha = serializers.SerializerMethodField()
    revisions = serializers.SerializerMethodField()
    approvals = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    merged_by = serializers.CharField(source="merged_by.username", allow_null=True, default=None)
    merged_at = serializers.DateTimeField(allow_null=True)
    merge_strategy = serializers.CharField()
    merged_sha = serializers.CharField()
    merge_push_id = serializers.IntegerField(allow_null=True)

    def _latest(self, proposal):
        cache = self.context.setdefault("latest", {})
        if proposal.pk not in cache:
            cache[proposal.pk] = selectors.latest_revision(proposal)
        return cache[proposal.pk]

    def get_head_sha(self, proposal) -> str | None:
        latest = self._latest(proposal)
        return latest.head_sha if latest else None

    def get_base_sha(self, proposal) -> str | None:
        latest = self._latest(proposal)
        return latest.base_sha if latest else None

    def get_revisions(self, proposal) -> int:
        latest = self._latest(proposal)
        return latest.number if latest else 0

    def get_approvals(self, proposal) -> list[dict]:
        rows = selectors.approvals(proposal, self._latest(proposal))
        return ApprovalSerializer([r.__dict__ for r in rows], many=True).data  # type: ignore[return-value]  # many=True: a list


class ProposalCreateSerializer(serializers.Serializer):
    source_ref = serializers.CharField(
        max_length=300, help_text=f"{refspace.WORKSPACES}<you>/<name>, or just <name>."
    )
    target_branch = serializers.CharField(max_length=300)
    title = serializers.CharField(max_length=1000, **_TEXT)
    description = serializers.CharField(max_length=DESCRIPTION_MAX * 2, required=False, default="", **_TEXT)


class ProposalUpdateSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=1000, required=False, **_TEXT)
    description = serializers.CharField(max_length=DESCRIPTION_MAX * 2, required=False, **_TEXT)
    state = serializers.ChoiceField(choices=[ProposalState.OPEN, ProposalState.CLOSED], required=False)


class CommentSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    author = serializers.CharField(source="author_name", read_only=True)
    body = serializers.CharField(max_length=COMMENT_MAX * 2, **_TEXT)
    revision = serializers.IntegerField(
        source="revision.number", read_only=True, allow_null=True, default=None
    )
    created_at = serializers.DateTimeField(read_only=True)


def _printed_id(value: str) -> None:
    # Compared with the head's id as git prints it: the shape is all there is to check.
    if not is_printed_id(value):
        raise serializers.ValidationError("A whole commit id, in lower case.")


class MergeRequestSerializer(serializers.Serializer):
    strategy = serializers.ChoiceField(choices=MergeStrategy.values, default=MergeStrategy.MERGE)
    sha = serializers.CharField(
        required=False,
        validators=[_printed_id],
        help_text="Merge only if the proposal's head is still this commit (its whole id).",
    )


class MergeResultSerializer(serializers.Serializer):
    sha = serializers.CharField()
    old = serializers.CharField()
    push_id = serializers.IntegerField(allow_null=True)
    strategy = serializers.CharField()


def _proposal(request, owner: str, name: str, number: int) -> Proposal:
    """The proposal, or 404: also when it is taken-down or hidden work the user may not see."""
    repo = repo_or_404(request, owner, name)
    proposal = selectors.proposal_by_number(repo, number)
    if proposal is None or not selectors.proposal_visible(proposal, view_for(repo, request.user)):
        raise selectors.ProposalMissing()
    return proposal


class ProposalListView(APIView):
    def get_permissions(self):
        return [p() for p in AUTHENTICATED] if self.request.method == "POST" else super().get_permissions()

    @extend_schema(operation_id="repos_proposals_list", responses=paginated(ProposalSerializer))
    def get(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        paginator = Pagination()
        found = selectors.proposals_for(repo, request.query_params.get("state"), view_for(repo, request.user))
        page = paginator.paginate_queryset(found, request, view=self)
        return paginator.get_paginated_response(ProposalSerializer(page, many=True).data)

    @extend_schema(request=ProposalCreateSerializer, responses={201: ProposalSerializer})
    def post(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        data = ProposalCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        proposal = services.proposal_open(repo=repo, user=request.user, **data.validated_data)
        return Response(ProposalSerializer(proposal).data, status=status.HTTP_201_CREATED)


class ProposalDetailView(APIView):
    def get_permissions(self):
        return [p() for p in AUTHENTICATED] if self.request.method == "PATCH" else super().get_permissions()

    @extend_schema(responses=ProposalSerializer)
    def get(self, request, owner: str, name: str, number: int):
        return Response(ProposalSerializer(_proposal(request, owner, name, number)).data)

    @extend_schema(request=ProposalUpdateSerializer, responses=ProposalSerializer)
    def patch(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        data = ProposalUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        if "title" in values or "description" in values:
            proposal = services.proposal_edit(
                proposal=proposal,
                user=request.user,
                title=values.get("title"),
                description=values.get("description"),
            )
        wanted = values.get("state")
        if wanted == ProposalState.CLOSED and proposal.state != ProposalState.CLOSED:
            proposal = services.proposal_close(proposal=proposal, user=request.user)
        elif wanted == ProposalState.OPEN and proposal.state != ProposalState.OPEN:
            proposal = services.proposal_reopen(proposal=proposal, user=request.user)
        return Response(ProposalSerializer(proposal).data)


class CommentListView(APIView):
    def get_permissions(self):
        return [p() for p in AUTHENTICATED] if self.request.method == "POST" else super().get_permissions()

    @extend_schema(operation_id="repos_proposals_comments_list", responses=paginated(CommentSerializer))
    def get(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        paginator = Pagination()
        page = paginator.paginate_queryset(
            proposal.comments.filter(thread=None).select_related("revision"), request, view=self
        )
        return paginator.get_paginated_response(CommentSerializer(page, many=True).data)

    @extend_schema(request=CommentSerializer, responses={201: CommentSerializer})
    def post(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        data = CommentSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        comment = services.comment_add(proposal=proposal, user=request.user, body=data.validated_data["body"])
        return Response(CommentSerializer(comment).data, status=status.HTTP_201_CREATED)


class ApprovalView(APIView):
    permission_classes = AUTHENTICATED

    @extend_schema(request=None, responses={201: ApprovalSerializer})
    def post(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        approval = services.proposal_approve(proposal=proposal, user=request.user)
        body = {
            "username": request.user.username,
            "head_sha": approval.head_sha,
            "revision": approval.revision.number if approval.revision else None,
            "stale": False,
        }
        return Response(ApprovalSerializer(body).data, status=status.HTTP_201_CREATED)


class MergeView(APIView):
    permission_classes = AUTHENTICATED

    @extend_schema(
        request=MergeRequestSerializer,
        responses={200: MergeResultSerializer},
        description="409 when the merge conflicts (`error.fields.files` lists the files), the target "
        "branch moved, the proposal is not open, or the branch's merge rules are not met (`rules_not_met`, "
        "what is missing in `error.fields`); 403 for non-maintainers.",
    )
    def post(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        data = MergeRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = merge.proposal_merge(
            proposal=proposal,
            user=request.user,
            strategy=data.validated_data["strategy"],
            expected_head=data.validated_data.get("sha"),
        )
        return Response(MergeResultSerializer(result.__dict__).data)


class RevisionListView(APIView):
    @extend_schema(responses=RevisionSerializer(many=True))
    def get(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        return Response(RevisionSerializer(proposal.revisions.all(), many=True).data)
