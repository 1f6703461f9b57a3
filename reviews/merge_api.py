"""REST API beside merging: what stands before a merge (mergeability), "merge when ready",
and review requests. The merge itself is reviews.api.MergeView (409 `rules_not_met` with the
missing rules in `error.fields`)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from reviews import automerge, review_requests, selectors
from reviews.api import AUTHENTICATED, _proposal
from reviews.mergebox import merge_state
from reviews.models import MergeStrategy


class MergeabilitySerializer(serializers.Serializer):
    state = serializers.ChoiceField(
        choices=["checking", "clean", "conflicts", "error", "closed"],
        help_text="git's answer for the current (target tip, head) pair; `checking` until a worker computed it.",
    )
    conflicts = serializers.ListField(child=serializers.CharField())
    behind = serializers.IntegerField(allow_null=True, help_text="Target commits the proposal lacks.")
    target_sha = serializers.CharField(allow_null=True)
    head_sha = serializers.CharField(allow_null=True)
    rules_met = serializers.BooleanField()
    missing = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="What the branch's rules still ask, by kind: approvals, code_owners, checks_failing, checks_pending.",
    )
    auto_merge = serializers.CharField(allow_blank=True, help_text="The auto-merge strategy; empty: off.")


class AutoMergeSerializer(serializers.Serializer):
    strategy = serializers.ChoiceField(choices=MergeStrategy.values, default=MergeStrategy.MERGE)


class ReviewRequestSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    reason = serializers.CharField(read_only=True)
    requested_by = serializers.CharField(read_only=True, allow_null=True)


def _request_row(r) -> dict:
    return {
        "username": r.user.username,
        "reason": r.reason,
        "requested_by": r.requested_by.username if r.requested_by else None,
    }


class MergeabilityView(APIView):
    @extend_schema(responses=MergeabilitySerializer)
    def get(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        latest = selectors.latest_revision(proposal)
        body: dict[str, Any] = {
            "state": "closed",
            "conflicts": [],
            "behind": None,
            "target_sha": None,
            "head_sha": latest.head_sha if latest else None,
            "rules_met": False,
            "missing": {},
            "auto_merge": proposal.auto_merge_strategy,
        }
        if proposal.is_open and latest is not None:
            found = merge_state(proposal, latest)
            check = found["check"]
            body.update(
                state=check.state if check else "checking",
                conflicts=list(check.conflicts) if check else [],
                behind=check.behind if check else None,
                target_sha=check.target_sha if check else None,
                rules_met=found["verdict"].ok,
                missing=found["verdict"].as_fields(),
            )
        return Response(MergeabilitySerializer(body).data)


class AutoMergeView(APIView):
    permission_classes = AUTHENTICATED

    @extend_schema(request=AutoMergeSerializer, responses=MergeabilitySerializer)
    def put(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        data = AutoMergeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        automerge.auto_merge_enable(
            proposal=proposal, user=request.user, strategy=data.validated_data["strategy"]
        )
        return MergeabilityView().get(request, owner, name, number)

    @extend_schema(responses={204: None})
    def delete(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        automerge.auto_merge_cancel(proposal=proposal, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ReviewRequestListView(APIView):
    def get_permissions(self):
        return [p() for p in AUTHENTICATED] if self.request.method == "POST" else super().get_permissions()

    @extend_schema(
        operation_id="repos_proposals_review_requests_list", responses=ReviewRequestSerializer(many=True)
    )
    def get(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        rows = [_request_row(r) for r in review_requests.review_requests(proposal)]
        return Response(ReviewRequestSerializer(rows, many=True).data)

    @extend_schema(
        request=ReviewRequestSerializer,
        responses={201: ReviewRequestSerializer, 200: ReviewRequestSerializer},
        description="The author or a maintainer asks a user who may see the proposal; 200 if asked already. "
        "Naming someone who may not see it answers as a missing proposal does (404).",
    )
    def post(self, request, owner: str, name: str, number: int):
        proposal = _proposal(request, owner, name, number)
        data = ReviewRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        made = review_requests.review_request(
            proposal=proposal, actor=request.user, username=data.validated_data["username"]
        )
        username = data.validated_data["username"].strip().removeprefix("@").lower()
        row = made or next(
            r for r in review_requests.review_requests(proposal) if r.user.username.lower() == username
        )
        return Response(
            ReviewRequestSerializer(_request_row(row)).data,
            status=status.HTTP_201_CREATED if made else status.HTTP_200_OK,
        )
