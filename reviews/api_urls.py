from django.urls import path

from reviews import api, merge_api
from reviews.threads import api as thread_api

_P = "repos/<str:owner>/<str:name>/proposals"

urlpatterns = [
    path(_P, api.ProposalListView.as_view(), name="api-proposals"),
    path(f"{_P}/<int:number>", api.ProposalDetailView.as_view(), name="api-proposal"),
    path(f"{_P}/<int:number>/comments", api.CommentListView.as_view(), name="api-proposal-comments"),
    path(f"{_P}/<int:number>/approvals", api.ApprovalView.as_view(), name="api-proposal-approvals"),
    path(f"{_P}/<int:number>/merge", api.MergeView.as_view(), name="api-proposal-merge"),
    path(f"{_P}/<int:number>/revisions", api.RevisionListView.as_view(), name="api-proposal-revisions"),
    path(
        f"{_P}/<int:number>/mergeability",
        merge_api.MergeabilityView.as_view(),
        name="api-proposal-mergeability",
    ),
    path(f"{_P}/<int:number>/auto-merge", merge_api.AutoMergeView.as_view(), name="api-proposal-auto-merge"),
    path(
        f"{_P}/<int:number>/review-requests",
        merge_api.ReviewRequestListView.as_view(),
        name="api-proposal-review-requests",
    ),
    path(f"{_P}/<int:number>/threads", thread_api.ThreadListView.as_view(), name="api-proposal-threads"),
    path(
        f"{_P}/<int:number>/threads/<int:thread>",
        thread_api.ThreadDetailView.as_view(),
        name="api-proposal-thread",
    ),
    path(
        f"{_P}/<int:number>/threads/<int:thread>/comments",
        thread_api.ThreadReplyView.as_view(),
        name="api-proposal-thread-comments",
    ),
    path(
        f"{_P}/<int:number>/threads/<int:thread>/comments/<int:comment>",
        thread_api.ThreadCommentView.as_view(),
        name="api-proposal-thread-comment",
    ),
]
