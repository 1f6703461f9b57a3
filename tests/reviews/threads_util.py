"""Shared set-up of the line-comment tests: a proposal of alice's that changes code.txt (ten
numbered lines), and new revisions pushed onto it with real git."""

from __future__ import annotations

from reviews import selectors, services
from reviews.threads import services as threads

REF = "refs/users/alice/feature"
TEN = "".join(f"line {n}\n" for n in range(1, 11))


def numbered(*lines: str) -> str:
    return "".join(f"{line}\n" for line in lines)


def propose(scene, text: str = TEN, files: dict | None = None):
    """alice's proposal adding code.txt (and `files`) onto main."""
    scene.checkout("feature", "main")
    scene.commit("feature", {"code.txt": text, **(files or {})})
    scene.publish("feature", REF)
    scene.checkout("main")
    return services.proposal_open(
        repo=scene.repo, user=scene.alice, source_ref=REF, target_branch="main", title="Add code"
    )


def revise(scene, proposal, files: dict, *, rebase_onto: str | None = None):
    """A new revision: a commit on the feature branch (rebased onto `rebase_onto` first)."""
    scene.checkout("feature")
    if rebase_onto:
        scene.git("rebase", "--quiet", rebase_onto)
    head = scene.commit("more", files)
    scene.publish("feature", REF)
    scene.checkout("main")
    return services.revision_record(proposal=proposal, head=head)


def comment(
    scene,
    proposal,
    *,
    line_start=2,
    line_end=None,
    side="new",
    path="code.txt",
    body="Why?",
    user=None,
    revision=None,
):
    return threads.thread_create(
        proposal=proposal,
        user=user or scene.bob,
        revision=revision or selectors.latest_revision(proposal),
        path=path,
        side=side,
        line_start=line_start,
        line_end=line_end or line_start,
        body=body,
    )
