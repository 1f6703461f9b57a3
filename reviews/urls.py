from django.urls import path

from reviews import interdiff_views, merge_views, new_proposal, views
from reviews.threads import views as thread_views

_P = "<str:owner>/<str:name>/proposals"

urlpatterns = [
    path(_P, views.proposal_list, name="proposals"),
    path(f"{_P}/new", new_proposal.proposal_new, name="proposal-new"),
    path(f"{_P}/<int:number>", views.proposal_detail, name="proposal"),
    path(f"{_P}/<int:number>/revisions/<int:revision>", views.proposal_detail, name="proposal-revision"),
    path(f"{_P}/<int:number>/edit", views.proposal_edit, name="proposal-edit"),
    path(f"{_P}/<int:number>/comment", views.proposal_comment, name="proposal-comment"),
    path(f"{_P}/<int:number>/approve", views.proposal_approve, name="proposal-approve"),
    path(f"{_P}/<int:number>/state", views.proposal_state, name="proposal-state"),
    path(f"{_P}/<int:number>/merge", merge_views.proposal_merge, name="proposal-merge"),
    path(f"{_P}/<int:number>/auto-merge", merge_views.proposal_auto_merge, name="proposal-auto-merge"),
    path(
        f"{_P}/<int:number>/review-requests",
        merge_views.proposal_review_request,
        name="proposal-review-requests",
    ),
    path(f"{_P}/<int:number>/threads", thread_views.thread_new, name="proposal-threads"),
    path(
        f"{_P}/<int:number>/threads/<int:thread>/reply",
        thread_views.thread_reply,
        name="proposal-thread-reply",
    ),
    path(
        f"{_P}/<int:number>/threads/<int:thread>/resolve",
        thread_views.thread_resolve,
        name="proposal-thread-resolve",
    ),
    path(
        f"{_P}/<int:number>/threads/<int:thread>/comments/<int:comment>",
        thread_views.comment_change,
        name="proposal-thread-comment",
    ),
    path(
        f"{_P}/<int:number>/threads/<int:thread>/comments/<int:comment>/apply",
        thread_views.suggestion_apply,
        name="proposal-suggestion-apply",
    ),
    path(f"{_P}/<int:number>/interdiff", interdiff_views.interdiff_pick, name="proposal-interdiff-pick"),
    path(
        f"{_P}/<int:number>/interdiff/<int:old>..<int:new>",
        interdiff_views.interdiff_page,
        name="proposal-interdiff",
    ),
    path(
        f"{_P}/<int:number>/interdiff/<int:old>..<int:new>.txt",
        interdiff_views.range_diff_text,
        name="proposal-range-diff",
    ),
]
