"""The "new proposal" form: the user's workspace refs and a target branch, with the title
prefilled from the first commit of the work, and refs that already have an open proposal
marked, linked, and refused before anything is opened."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render

from gitcore.git import GitError, run_git
from gitcore.gittools import rev_parse
from repos import browse as repo_browse
from repos import history
from repos.errors import ServiceError
from repos.views import form_error, repo_or_404
from reviews import queues, services
from reviews.models import DESCRIPTION_MAX, TITLE_MAX
from workspaces import browse as ws_browse

# A range longer than this is not walked for its first commit (the tip's subject is used).
MAX_RANGE = 10_000


class ProposalForm(forms.Form):
    source_ref = forms.ChoiceField(label="Your workspace ref")
    target_branch = forms.ChoiceField(label="Target branch")
    title = forms.CharField(max_length=TITLE_MAX)
    description = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}), required=False, max_length=DESCRIPTION_MAX
    )

    def __init__(self, *args, refs, branches, default_branch: str, proposed: dict[str, int], **kwargs):
        super().__init__(*args, **kwargs)
        self.proposed = proposed
        self.fields["source_ref"].choices = [  # type: ignore[attr-defined]  # a ChoiceField
            (
                r.ref,
                f"{r.name} ({r.subject[:60]})"
                + (f" (proposal #{proposed[r.ref]})" if r.ref in proposed else ""),
            )
            for r in refs
        ]
        self.fields["target_branch"].choices = [  # type: ignore[attr-defined]
            (b, b) for b in sorted(branches, key=lambda b: b != default_branch)
        ]

    def clean_source_ref(self) -> str:
        # Refused here, naming the proposal, rather than by the service after the submit.
        ref = self.cleaned_data["source_ref"]
        if ref in self.proposed:
            raise forms.ValidationError(
                "%(ref)s already has an open proposal: #%(number)s.",
                code="already_proposed",
                params={"ref": ref, "number": self.proposed[ref]},
            )
        return ref


def first_commit(path, tip: str, target: str | None) -> tuple[str, int]:
    """The oldest commit of `tip` that `target` (a commit, or None) lacks, and how many such
    commits there are; the tip itself when there are none, one, or too many to walk."""
    exclude = ["--not", target] if target else []
    count = int(run_git(["rev-list", "--count", tip, *exclude, "--"], repo=path).text.strip() or 0)
    if count <= 1 or count > MAX_RANGE:
        return tip, count
    out = run_git(["rev-list", "--reverse", "--topo-order", tip, *exclude, "--"], repo=path).text
    return out.split("\n", 1)[0].strip() or tip, count


def _prefill(request, repo, refs, branches) -> dict:
    """The form's initial values from `?ref=<full ref>&target=<branch>` (the link a push
    prints): a ref of the user's own workspace, an existing branch, and the title from the
    first commit the target lacks (with its body as the description when it is the only
    one; with none, the tip's). Anything else in the query is ignored."""
    initial = {"target_branch": repo.default_branch}
    target = request.GET.get("target")
    if target in branches:
        initial["target_branch"] = target
    wanted = request.GET.get("ref")
    chosen = next((r for r in refs if wanted in (r.ref, r.name)), None)
    if chosen is None:
        return initial
    initial["source_ref"] = chosen.ref
    path = repo.disk_path
    try:
        sha, count = first_commit(path, chosen.sha, rev_parse(path, f"refs/heads/{initial['target_branch']}"))
        commit = history.commit_detail(path, sha)
    except (GitError, IndexError, ValueError):
        return initial  # a ref at a blob or tree, say: no commit to take a title from
    initial["title"] = commit.subject[:TITLE_MAX]
    if count <= 1:
        initial["description"] = commit.body[:DESCRIPTION_MAX]
    return initial


@login_required
def proposal_new(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    refs = ws_browse.user_refs(repo, request.user.username)
    branches = [r.name for r in repo_browse.refs(repo.disk_path) if r.kind == "branch"]
    proposed = queues.open_proposal_numbers(repo, request.user, [r.ref for r in refs])
    initial = _prefill(request, repo, refs, branches)
    form = ProposalForm(
        request.POST or None,
        initial=initial,
        refs=refs,
        branches=branches,
        default_branch=repo.default_branch,
        proposed=proposed,
    )
    if request.method == "POST" and form.is_valid():
        try:
            proposal = services.proposal_open(repo=repo, user=request.user, **form.cleaned_data)
        except ServiceError as exc:
            form_error(form, exc)
        else:
            messages.success(request, f"Proposal #{proposal.number} opened.")
            return redirect("proposal", owner=repo.owner.username, name=repo.name, number=proposal.number)
    # The proposal a chosen (or prefilled) ref already has, to lead there.
    chosen = request.POST.get("source_ref") if request.method == "POST" else initial.get("source_ref")
    return render(
        request,
        "reviews/new.html",
        {
            "repo": repo,
            "form": form,
            "refs": [(r, proposed.get(r.ref)) for r in refs],
            "already": proposed.get(chosen or ""),
            "tab": "proposals",
        },
    )
