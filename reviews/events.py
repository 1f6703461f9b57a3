"""What happened to a proposal, told to the people it concerns (notifications). Every writer in
reviews calls one of these after its change; each only records notifications (and queues mail)
once the caller's transaction commits, and never raises into the caller.

Who is told, for every event: never the actor; only active users who may read the repository
and see this proposal (a hidden workspace's proposal is told to nobody who may not see it);
nobody who muted the proposal (or, for a new proposal, the repository). Each person hears once
per event. Those who take part (open, comment, are asked to review, approve) follow the
proposal from then on, as on GitHub, unless they muted it."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable

from django.db import transaction
from django.urls import reverse

from notifications import selectors as notification_selectors
from notifications import services as notification_services
from notifications import subjects
from repos.models import Role, User
from repos.selectors import members
from reviews.models import Approval, Comment, Proposal, ReviewRequest, Thread
from reviews.selectors import may_see

log = logging.getLogger(__name__)

# One comment may ping this many people at most: more is a mass mention, not a conversation.
MENTIONS_MAX = 50
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
# Not after a word character, @ or / (an e-mail address, a path), nor before / (GitHub's
# @org/team), as GitHub reads mentions.
_MENTION = re.compile(r"(?<![\w@/`])@([a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,38})(?![\w/-])", re.I | re.A)


def proposal_subject(proposal: Proposal) -> str:
    return f"proposal:{proposal.pk}"


def proposal_opened(proposal, *, actor) -> None:
    """Maintainers and followers of the repository hear of a new proposal."""
    _later(_proposal_opened, proposal, actor)


def review_requested(proposal, *, user, actor) -> None:
    """`user` was asked to review (by `actor`, or None for code owners)."""
    _later(_review_requested, proposal, user, actor)


def comment_added(comment, *, actor) -> None:
    """A comment or a reply: the proposal's author, the thread's participants, followers, and
    anyone @mentioned who may see the proposal."""
    _later(_comment_added, comment, actor)


def approved(approval, *, actor) -> None:
    """The proposal's author, participants and followers."""
    _later(_approved, approval, actor)


def merged(proposal, *, actor) -> None:
    """The proposal's author, participants and followers."""
    _later(_merged, proposal, actor)


def conflict_appeared(proposal, *, files) -> None:
    """The target moved and the proposal no longer merges cleanly: its author and followers."""
    _later(_conflict, proposal, list(files or []))


def check_failed(proposal, *, context: str, state: str, target_url: str = "") -> None:
    """A required or reported check failed on the proposal's head: its author and followers."""
    _later(_check_failed, proposal, context, state, target_url)


# --- the work, after the commit -----------------------------------------------------------------


def _later(work: Callable[..., None], *args) -> None:
    def run() -> None:
        try:
            work(*args)
        except Exception:  # a notification lost is logged; the change that caused it stands
            log.exception("notifications for %s failed", work.__name__)

    transaction.on_commit(run)


def mentioned_usernames(body: str) -> list[str]:
    """@names in a comment's Markdown, outside fenced or indented code blocks and code spans."""
    prose: list[str] = []
    fence = ""
    for line in str(body or "").splitlines():
        opening = _FENCE.match(line)
        if fence:
            if opening and opening[1][0] == fence[0] and len(opening[1]) >= len(fence):
                fence = ""
            continue
        if opening:
            fence = opening[1]
            continue
        if line.startswith(("    ", "\t")):
            continue
        prose.append(line)
    text = _CODE_SPAN.sub(" ", "\n".join(prose))
    seen: dict[str, None] = {}
    for match in _MENTION.finditer(text):
        seen.setdefault(match[1].lower(), None)
    return list(seen)[:MENTIONS_MAX]


def participants(proposal: Proposal) -> set[int]:
    """Its author, everyone who commented or started a thread, was asked to review, or approved."""
    ids = {proposal.author_id}
    ids |= set(Comment.objects.filter(proposal=proposal).values_list("author_id", flat=True))
    ids |= set(Thread.objects.filter(proposal=proposal).values_list("created_by_id", flat=True))
    ids |= set(ReviewRequest.objects.filter(proposal=proposal).values_list("user_id", flat=True))
    ids |= set(Approval.objects.filter(proposal=proposal).values_list("user_id", flat=True))
    return {pk for pk in ids if pk}


def _url(proposal: Proposal, anchor: str = "") -> str:
    repo = proposal.repository
    url = reverse("proposal", args=[repo.owner.username, repo.name, proposal.number])
    return f"{url}#{anchor}" if anchor else url


def _name(actor) -> str:
    return actor.username if actor is not None else "Someone"


def _about(proposal: Proposal, what: str = "") -> str:
    """ "#12 on owner/name<what>: Title": the title last, as it may say anything."""
    return f"#{proposal.number} on {proposal.repository.full_name}{what}: {proposal.title}"


def _tell(
    proposal: Proposal,
    kinds: dict[int, str],
    *,
    actor,
    text: Callable[[str], str],
    url: str,
    body: str = "",
    muted_subjects: Iterable[str] = (),
) -> int:
    """Notify each user id of `kinds` (id -> kind) who passes the rules above; returns how many."""
    subject = proposal_subject(proposal)
    repo = proposal.repository
    skip = notification_selectors.muted([subject, *muted_subjects])
    if actor is not None:
        skip.add(actor.pk)
    told = 0
    for user in User.objects.filter(pk__in=[pk for pk in kinds if pk not in skip], is_active=True):
        if not may_see(user, proposal):
            continue
        kind = kinds[user.pk]
        notification_services.notify(
            user,
            kind=kind,
            text=text(kind),
            url=url,
            repository=repo,
            actor=actor,
            subject=subject,
            body=body,
        )
        told += 1
    return told


def _follow(proposal: Proposal, *users) -> None:
    notification_services.subscriptions_follow(
        user_ids=[u.pk for u in users if u is not None], subject=proposal_subject(proposal)
    )


def _proposal_opened(proposal: Proposal, actor) -> None:
    _follow(proposal, proposal.author, actor)
    repo = proposal.repository
    watchers = {user.pk for user, role in members(repo) if role >= Role.MAINTAINER}
    watchers |= notification_selectors.followers(subjects.repository_subject(repo))
    _tell(
        proposal,
        dict.fromkeys(watchers, "proposal_opened"),
        actor=actor,
        text=lambda _k: f"{_name(actor)} opened proposal {_about(proposal)}",
        url=_url(proposal),
        body=proposal.description,
        muted_subjects=[subjects.repository_subject(repo)],
    )


def _review_requested(proposal: Proposal, user, actor) -> None:
    _follow(proposal, user)
    who = f"{actor.username} asked you to review" if actor is not None else "As a code owner, please review"
    _tell(
        proposal,
        {user.pk: "review_requested"},
        actor=actor,
        text=lambda _k: f"{who} proposal {_about(proposal)}",
        url=_url(proposal),
    )


def _comment_added(comment: Comment, actor) -> None:
    proposal = comment.proposal
    _follow(proposal, actor)
    kinds = dict.fromkeys(participants(proposal), "comment")
    kinds.update(dict.fromkeys(notification_selectors.followers(proposal_subject(proposal)), "comment"))
    names = mentioned_usernames(comment.body)
    if names:
        # Named people hear of it as a mention, whether or not they took part.
        for pk in User.objects.filter(username__in=names, is_active=True).values_list("pk", flat=True):
            kinds[pk] = "mention"
    where = f" on {comment.thread.path}" if comment.thread_id and comment.thread else ""

    def text(kind: str) -> str:
        verb = "mentioned you" if kind == "mention" else "commented"
        return f"{_name(actor)} {verb}{where} in {_about(proposal)}"

    _tell(
        proposal,
        kinds,
        actor=actor,
        text=text,
        url=_url(proposal, f"comment-{comment.pk}"),
        body=comment.body,
    )


def _approved(approval: Approval, actor) -> None:
    proposal = approval.proposal
    _follow(proposal, actor)
    _tell(
        proposal,
        _concerned(proposal, "approved"),
        actor=actor,
        text=lambda _k: f"{_name(actor)} approved {_about(proposal)}",
        url=_url(proposal),
    )


def _merged(proposal: Proposal, actor) -> None:
    proposal.refresh_from_db()
    into = f" into {proposal.target_branch}"
    _tell(
        proposal,
        _concerned(proposal, "merged"),
        actor=actor,
        text=lambda _k: f"{_name(actor)} merged proposal {_about(proposal, into)}",
        url=_url(proposal),
    )


def _conflict(proposal: Proposal, files: list[str]) -> None:
    listed = ", ".join(str(f) for f in files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    what = f" no longer merges cleanly into {proposal.target_branch}"
    if listed:
        what += f" (conflicts in {listed})"
    _tell(
        proposal,
        _author_and_followers(proposal, "conflict"),
        actor=None,
        text=lambda _k: f"Proposal {_about(proposal, what)}",
        url=_url(proposal),
        body="\n".join(str(f) for f in files),
    )


def _check_failed(proposal: Proposal, context: str, state: str, target_url: str) -> None:
    _tell(
        proposal,
        _author_and_followers(proposal, "check_failed"),
        actor=None,
        text=lambda _k: f"Check {context} is {state} on proposal {_about(proposal)}",
        url=_url(proposal),
        body=target_url,
    )


def _concerned(proposal: Proposal, kind: str) -> dict[int, str]:
    ids = participants(proposal) | notification_selectors.followers(proposal_subject(proposal))
    return dict.fromkeys(ids, kind)


def _author_and_followers(proposal: Proposal, kind: str) -> dict[int, str]:
    ids = {proposal.author_id} | notification_selectors.followers(proposal_subject(proposal))
    return dict.fromkeys(ids, kind)


# --- the subject "proposal:<id>" for notifications (follow forms, mail subjects, and whether an
# old notification may still show the proposal: notifications.selectors.as_shown) ---------------


def proposal_info(pk: int, user) -> subjects.SubjectInfo | None:
    proposal = Proposal.objects.select_related("repository__owner").filter(pk=pk).first()
    if proposal is None or proposal.repository.deleted_at is not None:
        return None
    repo = proposal.repository
    if user is not None and not may_see(user, proposal):
        return None
    return subjects.SubjectInfo(
        proposal_subject(proposal), repo, f"#{proposal.number} {proposal.title}", _url(proposal)
    )
