"""Taken-down and hidden work, asked at every route that takes a commit id, ref, path or
proposal.

Hidden must answer exactly like unknown: for anonymous users, a signed-in outsider and a
maintainer, every such route answers a taken-down or hidden workspace's commit (full or
abbreviated, lower or upper case: anonymous users in every form, the others in the full form
and two more in turn), ref, file or proposal with the same status and the same body as it
answers a missing one; staff get the content. The repository's admins and the workspace's
owner see a hidden workspace (but nothing taken down). Pages that tell the admins or the owner
that a workspace was taken down (its flags, the moderation page's audit log, its archived refs)
name none of its refs or ids to them, and the notifications they had about its proposal show
"Content removed". git's upload-pack is asked by every line that names an object (want, have,
shallow, object-info; v0 and v2): a moderated id gets the answer a missing one gets.

Routes are enumerated as in tests/test_visibility_matrix.py: a route of a repository without
a row here fails `test_every_repository_route_has_a_takedown_row`, so whether it can show
taken-down content is decided when the route is added.
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from gitcore.git import run_git
from repos import pushes, services
from repos.models import Role
from tests.factories import UserFactory
from tests.repos.histories import Work
from tests.test_visibility_matrix import REPO_ROUTES, all_routes

pytestmark = pytest.mark.django_db

ZERO = "0" * 40
MISSING_SHA = "d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7a8b9c0d"
MISSING_USER = "nobody"
MISSING_PROPOSAL = 9999
MISSING_PUSH = 999_999


@dataclass(frozen=True)
class Check:
    """Paths that name the moderated content: {id} a commit id, {user} the workspace's owner,
    {proposal} its proposal, {push} its push. `staff` is the status staff get (None: not
    asked, e.g. a POST that would change something)."""

    method: str
    paths: tuple[str, ...]
    staff: int | None = 200
    # Taken-down refs live under refs/takedown/: no route names them by ref, staff included.
    staff_taken_down: bool = True
    # A workspace's own page shows its flags (no content) to its owner and the admins.
    flags_page: bool = False


@dataclass(frozen=True)
class Listing:
    """A list: it must not mention the moderated commit, ref or proposal to those who may not
    see it (the exits test checks each listing's contents in detail)."""

    path: str
    signed_in: bool = False  # the signed-in user's own list: anonymous users are not asked


@dataclass(frozen=True)
class Detail:
    """A page that tells the repository's admins (and the workspace's owner, where it is theirs)
    that a workspace was taken down: its flags, reasons and dates, never a ref name or object id
    of what was taken down. Staff read every detail (`staff_names`: the page names the refs)."""

    path: str
    viewers: tuple[str, ...] = ("olga", "alice")
    staff_names: bool = True


@dataclass(frozen=True)
class Negotiation:
    """git's upload-pack, asked by every line that names an object ({id}: the moderated commit
    and its file, {main}: the visible branch): the same answer as for a missing id, up to the
    id; staff are served."""

    bodies: tuple[tuple[str, tuple[str, ...]], ...]  # (protocol, pkt-lines; "" a flush)


@dataclass(frozen=True)
class Exempt:
    why: str


ID_ROUTES: dict[str, Check | Listing | Detail | Exempt] = {
    "repo-tree": Check("GET", ("/{repo}/tree/{id}",)),
    "repo-blob": Check("GET", ("/{repo}/blob/{id}/work.txt",)),
    "repo-raw": Check("GET", ("/{repo}/raw/{id}/work.txt",)),
    "repo-blame": Check("GET", ("/{repo}/blame/{id}/work.txt",)),
    "repo-search": Check("GET", ("/{repo}/search?q=secret-text&ref={id}",)),
    "repo-commits": Check("GET", ("/{repo}/commits/{id}", "/{repo}/commits/{id}/work.txt")),
    "repo-commit": Check("GET", ("/{repo}/commit/{id}", "/{repo}/commit/{id}?file=work.txt")),
    "repo-compare": Check(
        "GET", ("/{repo}/compare/main...{id}", "/{repo}/compare/{id}...main", "/{repo}/compare/{id}")
    ),
    "repo-archive": Check(
        "GET", ("/{repo}/archive/{id}.tar.gz", "/{repo}/archive/{id}.tar.zst", "/{repo}/archive/{id}.zip")
    ),
    "short-hash": Check("GET", ("/{repo}/c/{id}",), staff=302),
    "json-pushes": Check(
        "GET", ("/{repo}/json-pushes?changeset={id}", "/{repo}/json-pushes?fromchange={id}")
    ),
    # The same pages with the workspace ref named in full (taken-down refs have moved away).
    "repo-tree (ref)": Check("GET", ("/{repo}/tree/refs/users/{user}/w",), staff_taken_down=False),
    "repo-blob (ref)": Check(
        "GET",
        ("/{repo}/blob/refs/users/{user}/w/work.txt", "/{repo}/raw/refs/users/{user}/w/work.txt"),
        staff_taken_down=False,
    ),
    "repo-commits (ref)": Check("GET", ("/{repo}/commits/refs/users/{user}/w",), staff_taken_down=False),
    "repo-compare (ref)": Check(
        "GET",
        ("/{repo}/compare/main...refs/users/{user}/w", "/{repo}/compare/refs/users/{user}/w"),
        staff_taken_down=False,
    ),
    "repo-archive (ref)": Check(
        "GET", ("/{repo}/archive/refs/users/{user}/w.tar.gz",), staff_taken_down=False
    ),
    "work-stack": Check("GET", ("/{repo}/work/stack/{user}/w",), staff_taken_down=False),
    "proposal": Check("GET", ("/{repo}/proposals/{proposal}",)),
    "proposal-revision": Check("GET", ("/{repo}/proposals/{proposal}/revisions/1",)),
    "proposal-edit": Check("POST", ("/{repo}/proposals/{proposal}/edit",), staff=None),
    "proposal-comment": Check("POST", ("/{repo}/proposals/{proposal}/comment",), staff=None),
    "proposal-approve": Check("POST", ("/{repo}/proposals/{proposal}/approve",), staff=None),
    "proposal-state": Check("POST", ("/{repo}/proposals/{proposal}/state",), staff=None),
    "proposal-merge": Check("POST", ("/{repo}/proposals/{proposal}/merge",), staff=None),
    "proposal-auto-merge": Check("POST", ("/{repo}/proposals/{proposal}/auto-merge",), staff=None),
    "proposal-review-requests": Check("POST", ("/{repo}/proposals/{proposal}/review-requests",), staff=None),
    # Staff not asked: the fixture's proposals have one revision, and an interdiff needs two
    # (staff seeing hidden work's interdiff: tests/reviews/test_interdiff.py).
    "proposal-interdiff": Check("GET", ("/{repo}/proposals/{proposal}/interdiff/1..2",), staff=None),
    "proposal-range-diff": Check("GET", ("/{repo}/proposals/{proposal}/interdiff/1..2.txt",), staff=None),
    "proposal-interdiff-pick": Check(
        "GET", ("/{repo}/proposals/{proposal}/interdiff?from=1&to=1",), staff=302
    ),
    "api-proposal": Check("GET", ("/api/v1/repos/{repo}/proposals/{proposal}",)),
    "api-proposal-comments": Check("GET", ("/api/v1/repos/{repo}/proposals/{proposal}/comments",)),
    "api-proposal-revisions": Check("GET", ("/api/v1/repos/{repo}/proposals/{proposal}/revisions",)),
    "api-proposal-approvals": Check(
        "POST", ("/api/v1/repos/{repo}/proposals/{proposal}/approvals",), staff=None
    ),
    "api-proposal-merge": Check("POST", ("/api/v1/repos/{repo}/proposals/{proposal}/merge",), staff=None),
    "api-proposal-mergeability": Check("GET", ("/api/v1/repos/{repo}/proposals/{proposal}/mergeability",)),
    "api-proposal-auto-merge": Check(
        "PUT", ("/api/v1/repos/{repo}/proposals/{proposal}/auto-merge",), staff=None
    ),
    "api-proposal-review-requests": Check(
        "GET", ("/api/v1/repos/{repo}/proposals/{proposal}/review-requests",)
    ),
    # Line comments: thread 1 exists for no proposal here, so staff are not asked.
    "proposal-threads": Check("POST", ("/{repo}/proposals/{proposal}/threads",), staff=None),
    "proposal-thread-reply": Check("POST", ("/{repo}/proposals/{proposal}/threads/1/reply",), staff=None),
    "proposal-thread-resolve": Check("POST", ("/{repo}/proposals/{proposal}/threads/1/resolve",), staff=None),
    "proposal-thread-comment": Check(
        "POST", ("/{repo}/proposals/{proposal}/threads/1/comments/1",), staff=None
    ),
    "proposal-suggestion-apply": Check(
        "POST", ("/{repo}/proposals/{proposal}/threads/1/comments/1/apply",), staff=None
    ),
    "api-proposal-threads": Check("GET", ("/api/v1/repos/{repo}/proposals/{proposal}/threads",)),
    "api-proposal-thread": Check("GET", ("/api/v1/repos/{repo}/proposals/{proposal}/threads/1",), staff=None),
    "api-proposal-thread-comment": Check(
        "PATCH", ("/api/v1/repos/{repo}/proposals/{proposal}/threads/1/comments/1",), staff=None
    ),
    "api-proposal-thread-comments": Check(
        "POST", ("/api/v1/repos/{repo}/proposals/{proposal}/threads/1/comments",), staff=None
    ),
    "api-push": Check("GET", ("/api/v1/repos/{repo}/pushes/{push}",)),
    "api-statuses": Check("GET", ("/api/v1/repos/{repo}/statuses/{id}",)),
    "api-combined-status": Check("GET", ("/api/v1/repos/{repo}/commits/{id}/status",)),
    "workspace-user": Check("GET", ("/{repo}/workspaces/{user}",), staff_taken_down=False, flags_page=True),
    "workspace-ref": Check("GET", ("/{repo}/workspaces/{user}/w",), staff_taken_down=False),
    "workspace-bundle": Check("GET", ("/{repo}/workspaces/{user}.bundle",), staff_taken_down=False),
    "api-workspace": Check(
        "GET", ("/api/v1/repos/{repo}/workspaces/{user}",), staff_taken_down=False, flags_page=True
    ),
    # The editor on a workspace ref (a proposal's files edited in place).
    "webedit-edit": Check("GET", ("/{repo}/edit/refs/users/{user}/w/work.txt",), staff_taken_down=False),
    "webedit-delete": Check("GET", ("/{repo}/delete/refs/users/{user}/w/work.txt",), staff_taken_down=False),
    "webedit-new": Check("GET", ("/{repo}/new/refs/users/{user}/w",), staff_taken_down=False),
    "webedit-upload": Check("GET", ("/{repo}/upload/refs/users/{user}/w/",), staff_taken_down=False),
    "webedit-done": Exempt("the signed-in user's own last web commit, kept in their session"),
    "pushlog-atom": Listing("/{repo}/pushlog.atom"),
    "pushlog": Listing("/{repo}/pushlog?workspaces=1"),
    "api-pushes": Listing("/api/v1/repos/{repo}/pushes"),
    "proposals": Listing("/{repo}/proposals?state=all"),
    "api-proposals": Listing("/api/v1/repos/{repo}/proposals"),
    "work": Listing("/{repo}/work?older=1"),
    "work-text": Listing("/{repo}/work.txt?older=1"),
    "api-work": Listing("/api/v1/repos/{repo}/work?older=1"),
    "workspaces": Listing("/{repo}/workspaces"),
    "api-workspaces": Listing("/api/v1/repos/{repo}/workspaces"),
    "repository": Listing("/{repo}"),
    "repo-commits-default": Listing("/{repo}/commits"),
    "repo-refs-json": Listing("/{repo}/refs.json"),
    "repo-branches": Listing("/{repo}/branches"),
    "repo-tags": Listing("/{repo}/tags"),
    "repo-compare-pick": Listing("/{repo}/compare"),
    "search": Listing("/search?q=proposal&type=proposals"),
    "api-search-proposals": Listing("/api/v1/search/proposals?q=proposal"),
    "api-search-commits": Listing("/api/v1/search/commits?q=secret"),
    # Not repository routes: what each viewer was told before the moderation.
    "notifications": Listing("/notifications", signed_in=True),
    "api-notifications": Listing("/api/v1/notifications", signed_in=True),
    "repository-moderation": Detail("/{repo}/settings/moderation", viewers=("olga",)),
    "api-archived-refs": Detail("/api/v1/repos/{repo}/workspaces/{user}/archived"),
    "git-info-refs": Exempt("git: refs are hidden per request; tests/workspaces/test_fetch_oracles.py"),
    "git-rpc": Negotiation(
        (
            ("v2", ("command=fetch\n", "<delim>", "want {id}\n", "done\n", "")),
            ("v2", ("command=fetch\n", "<delim>", "want {main}\n", "have {id}\n", "")),
            (
                "v2",
                (
                    "command=fetch\n",
                    "<delim>",
                    "want {main}\n",
                    "shallow {id}\n",
                    "deepen 1\n",
                    "no-progress\n",
                    "done\n",
                    "",
                ),
            ),
            ("v2", ("command=object-info\n", "<delim>", "size\n", "oid {id}\n", "")),
            ("v0", ("want {id} multi_ack_detailed side-band-64k ofs-delta no-progress\n", "", "done\n")),
            (
                "v0",
                (
                    "want {main} multi_ack_detailed side-band-64k ofs-delta no-progress\n",
                    "",
                    "have {id}\n",
                    "",
                ),
            ),
        )
    ),
    "bundle-list": Exempt("bundles hold canonical refs only, never workspaces (DESIGN.md)"),
    "bundles-page": Exempt("bundles hold canonical refs only"),
    "bundles-build": Exempt("bundles hold canonical refs only"),
    "archived-restore": Exempt("by archived-ref id, checked by the workspace's flags (write_refusal)"),
    "api-archived-ref-restore": Exempt(
        "by archived-ref id, checked by the workspace's flags (write_refusal)"
    ),
    "workspace-report": Exempt("names a user, shows no content"),
    "repository-refs": Exempt("admins' ref list: canonical and other non-workspace refs only"),
    "api-refs": Exempt("admins' ref list: canonical and other non-workspace refs only"),
    "api-refs-remove": Exempt("refuses workspace, archive and take-down refs"),
    "api-ref": Exempt("refuses workspace, archive and take-down refs"),
}
# Settings, membership and the like: named one by one, so a new content route cannot slip in
# under a prefix.
_NO_CONTENT = (
    "repository-settings",
    "repository-member-set",
    "repository-member-remove",
    "repository-rename",
    "repository-transfer",
    "repository-delete",
    "repository-restore",
    "repository-webhook-add",
    "repository-webhook-delete",
    "mirror-settings",
    "mirror-sync",
    "repository-object-checks",
    "workspace-settings",
    "proposal-new",
    "api-repo",
    "api-repo-restore",
    "api-repo-transfer",
    "api-members",
    "api-member",
    "api-hooks",
    "api-hook",
    "api-hook-deliveries",
    "api-mirror",
    "api-mirror-sync",
    "api-object-checks",
    "api-protected-branches",
    "api-protected-branch",
    "api-workspace-settings",
    "repository-deploy-keys",
    "repository-deploy-key-delete",
    "api-deploy-keys",
    "api-deploy-key",
)
for _name in _NO_CONTENT:
    ID_ROUTES.setdefault(_name, Exempt("settings or membership: takes no commit id, ref, path or proposal"))

# URL converters that carry a commit id, ref, path or proposal, wherever the route is.
_NAMING = re.compile(r"<(?:path:|str:)?(?:sha|spec|ref|refname|prefix|number|branch|revision)>")


def test_every_repository_route_has_a_takedown_row():
    missing = []
    for name, pattern in all_routes():
        if name is None or name in ID_ROUTES:
            continue  # unnamed: the dumb-HTTP catch-all (tests/test_visibility_matrix.py)
        if name in REPO_ROUTES or _NAMING.search(pattern) or "<str:owner>/<str:name>" in pattern:
            missing.append(f"{name} ({pattern})")
    assert not missing, "routes without a row in the take-down matrix: " + ", ".join(missing)
    for row in ID_ROUTES.values():
        assert not isinstance(row, Exempt) or row.why


@pytest.fixture
def moderated(tmp_path, git_home, django_capture_on_commit_callbacks):
    """olga's public repository: alice's workspace (taken down, with an archived ref) and hugo's
    (hidden), each with a commit adding work.txt, a proposal and a recorded push; maud maintains,
    otto is an outsider who watches the repository and commented on both proposals, sam is
    staff. Everyone concerned was told of the proposals before the moderation."""
    from notifications.models import Notification
    from notifications.services import subscription_set
    from reviews.services import comment_add, proposal_open
    from workspaces import moderation
    from workspaces.models import ArchivedRef

    work = Work(tmp_path / "w", git_home)
    work.commit("first", {"README.md": "# project\n"})
    heads = {}
    for user in ("alice", "hugo"):
        work.git("checkout", "-q", "-b", user, "main")
        heads[user] = work.commit(f"{user}'s secret work", {"work.txt": f"{user}-secret-text\n"})
    work.git("checkout", "-q", "main")
    repo = work.publish(owner="olga", name="proj")
    olga = repo.owner
    users = {"olga": olga}
    for name in ("alice", "hugo", "maud", "otto"):
        users[name] = UserFactory(username=name)
    users["sam"] = UserFactory(username="sam", is_staff=True)
    services.membership_set(repo=repo, user=users["maud"], role=Role.MAINTAINER)
    subscription_set(user=users["otto"], subject=f"repository:{repo.pk}", subscribed=True)
    values = {}
    for user, head in heads.items():
        run_git(["update-ref", "-d", f"refs/heads/{user}"], repo=repo.disk_path)
        run_git(["update-ref", f"refs/users/{user}/w", head], repo=repo.disk_path)
        push = pushes.push_record(
            repo=repo, pusher=users[user], updates=[pushes.Update(ZERO, head, f"refs/users/{user}/w")]
        )
        with django_capture_on_commit_callbacks(execute=True):
            proposal = proposal_open(
                repo=repo,
                user=users[user],
                source_ref=f"refs/users/{user}/w",
                target_branch="main",
                title=f"{user}'s proposal",
            )
        with django_capture_on_commit_callbacks(execute=True):
            comment_add(proposal=proposal, user=users["otto"], body="a question")
        values[user] = {"id": head, "user": user, "proposal": proposal.number, "push": push.pk}
    run_git(["update-ref", "refs/archive/alice/1", heads["alice"]], repo=repo.disk_path)
    ArchivedRef.objects.create(
        repository=repo,
        username="alice",
        ref="refs/users/alice/old",
        sha=heads["alice"],
        archive_ref="refs/archive/alice/1",
        branch="main",
        how="merged",
        reason="merged",
        expires_at=timezone.now() + timedelta(days=30),
    )
    told = {
        (n.user.username, n.text.rpartition(": ")[2]) for n in Notification.objects.select_related("user")
    }
    expected = {(who, "alice's proposal") for who in ("olga", "maud", "otto", "alice")}
    assert expected | {(who, "hugo's proposal") for who in ("olga", "maud", "otto", "hugo")} <= told
    moderation.do_take_down_workspace(repo=repo, user=users["alice"], acting_user=users["sam"], reason="DMCA")
    moderation.do_hide_workspace(repo=repo, user=users["hugo"], acting_user=users["sam"], reason="abuse")
    tokens = {name: services.token_create(user=user, scope="write")[1] for name, user in users.items()}
    return {"repo": repo, "users": users, "tokens": tokens, "values": values}


def _client(world, who: str | None, api: bool) -> Client:
    if who is None:
        return Client()
    if api:
        return Client(HTTP_AUTHORIZATION=f"Bearer {world['tokens'][who]}")
    client = Client()
    client.force_login(world["users"][who])
    return client


_CSRF = re.compile(r'(csrfmiddlewaretoken" value="|csrf-token" content=")[^"]*')


def _answer(client: Client, method: str, path: str, names: list[str]) -> tuple[int, str]:
    """Status and body, with what the request named replaced: a hidden and a missing id must
    give the same answer up to the id itself."""
    response = getattr(client, method.lower())(path)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    text = _CSRF.sub(r"\1", body.decode("utf-8", "replace"))
    for name in sorted(names, key=len, reverse=True):
        text = text.replace(name, "<named>")
    return response.status_code, text


def _id_forms(sha: str) -> list[str]:
    return [sha, sha.upper(), sha[:7], sha[:7].upper(), sha[:12]]


def _fill(path: str, values: dict, id_form: str) -> str:
    return path.format(
        repo="olga/proj", id=id_form, user=values["user"], proposal=values["proposal"], push=values["push"]
    )


MISSING = {"user": MISSING_USER, "proposal": MISSING_PROPOSAL, "push": MISSING_PUSH}


def _forms_for(k: int) -> tuple[int, ...]:
    """The id forms asked of the k-th viewer: anonymous (k 0) every form; each other viewer the
    full id and two other forms in turn, so any two signed-in viewers in a row ask every form
    (a normalisation slip lives in the lookup, whoever asks; the viewer's rule in the access
    layer, whatever the form)."""
    if k == 0:
        return tuple(range(5))
    return (0, 1 + (2 * k - 2) % 4, 1 + (2 * k - 1) % 4)


def _cases(row: Check, values: dict, forms: tuple[int, ...]):
    """(path to the moderated content, path to missing content, what each names)."""
    for path in row.paths:
        for i in forms if "{id}" in path else (0,):
            hidden_id, missing_id = _id_forms(values["id"])[i], _id_forms(MISSING_SHA)[i]
            hidden = _fill(path, values, hidden_id)
            missing = _fill(path, {**values, **MISSING}, missing_id)
            # The path itself shows up in the page (the sign-in link), and the id in messages.
            yield (
                hidden,
                missing,
                [hidden.partition("?")[0], hidden_id, hidden_id.lower()],
                [missing.partition("?")[0], missing_id, missing_id.lower()],
            )


@pytest.mark.parametrize(
    "moderated_user, blind, seeing",
    [
        # Taken down: only staff see it, the repository's admins and the owner included.
        ("alice", (None, "otto", "maud", "olga", "alice"), ()),
        # Hidden: the owner and the repository's admins see it too.
        ("hugo", (None, "otto", "maud"), ("olga", "hugo")),
    ],
)
def test_moderated_content_answers_as_missing_content(moderated, moderated_user, blind, seeing):
    values = moderated["values"][moderated_user]
    failures = []
    for route, row in ID_ROUTES.items():
        if not isinstance(row, Check):
            continue
        api = row.paths[0].startswith("/api/")
        for k, who in enumerate(blind):
            if row.flags_page and who in ("olga", "alice"):
                continue
            client = _client(moderated, who, api)
            for hidden, missing, hidden_names, missing_names in _cases(row, values, _forms_for(k)):
                got = _answer(client, row.method, hidden, hidden_names)
                expected = _answer(client, row.method, missing, missing_names)
                if got != expected:
                    failures.append(
                        f"{route} {who or 'anonymous'} {hidden}: {got[0]} != missing {expected[0]}"
                        + ("" if got[0] != expected[0] else " (bodies differ)")
                    )
        if row.staff is None or (moderated_user == "alice" and not row.staff_taken_down):
            continue
        for k, who in enumerate(("sam", *seeing), start=len(blind)):
            client = _client(moderated, who, api)
            for hidden, *_ in _cases(row, values, _forms_for(k)):
                status = _answer(client, row.method, hidden, [])[0]
                if status != row.staff:
                    failures.append(f"{route} {who} {hidden}: {status}, not {row.staff}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    "moderated_user, blind",
    [("alice", (None, "otto", "maud", "olga", "alice")), ("hugo", (None, "otto", "maud"))],
)
def test_listings_do_not_mention_moderated_content(moderated, moderated_user, blind):
    values = moderated["values"][moderated_user]
    secrets = (
        values["id"][:7],
        f"{moderated_user}'s secret work",
        f"{moderated_user}'s proposal",
        f"{moderated_user}-secret-text",
        f"refs/users/{moderated_user}/",
    )
    failures = []
    for route, row in ID_ROUTES.items():
        if not isinstance(row, Listing):
            continue
        path = row.path.format(repo="olga/proj")
        for who in blind:
            if who == moderated_user and route in ("workspaces", "api-workspaces"):
                continue  # their own workspace's row (its flags) is theirs to see
            if who is None and row.signed_in:
                continue
            status, text = _answer(_client(moderated, who, path.startswith("/api/")), "GET", path, [])
            text = html.unescape(text)  # "alice's proposal" is alice&#x27;s in a page
            # The repository page tells a signed-in user how to push to their own workspace.
            leaked = [
                s for s in secrets if s in text and not (who == moderated_user and s.startswith("refs/"))
            ]
            if status != 200 or leaked:
                failures.append(f"{route} {who or 'anonymous'}: {status}, mentions {leaked}")
    assert not failures, "\n".join(failures)


def test_moderation_detail_names_no_taken_down_ref_or_id_but_to_staff(moderated):
    """alice's workspace is taken down: the pages that tell the repository's admin (olga) and
    alice that it is (its flags, the moderation page's audit log, its archived refs) name
    nothing it held, the refs its take-down moved and its archived refs included."""
    values = moderated["values"]["alice"]
    sha = values["id"]
    secrets = (sha, sha.upper(), sha[:7], sha[:10], "refs/users/alice/w", "refs/users/alice/old")
    secrets += ("refs/takedown/alice/", "refs/archive/alice/")
    rows = {
        route: Detail(row.paths[0], staff_names=False) if isinstance(row, Check) else row
        for route, row in ID_ROUTES.items()
        if isinstance(row, Detail) or (isinstance(row, Check) and row.flags_page)
    }
    assert {"repository-moderation", "api-archived-refs", "workspace-user", "api-workspace"} <= set(rows)
    failures = []
    for route, row in rows.items():
        path = _fill(row.path, values, sha)
        api = path.startswith("/api/")
        for who in row.viewers:
            status, text = _answer(_client(moderated, who, api), "GET", path, [])
            leaked = [s for s in secrets if s in html.unescape(text)]
            if status != 200 or leaked:
                failures.append(f"{route} {who}: {status}, names {leaked}")
        status, text = _answer(_client(moderated, "sam", api), "GET", path, [])
        if status != 200 or (row.staff_names and sha not in text):
            failures.append(f"{route} sam: {status}, staff do not read the id")
    assert not failures, "\n".join(failures)


def _git_body(lines: tuple[str, ...], **ids: str) -> bytes:
    from gitcore import pktline

    out = b""
    for line in lines:
        if line == "":
            out += pktline.FLUSH
        elif line == "<delim>":
            out += pktline.DELIM
        else:
            out += pktline.encode(line.format(**ids))
    return out


def _git_answer(world, who: str | None, protocol: str, body: bytes) -> tuple[int, list[bytes]]:
    import base64

    from tests.workspaces.rawgit import normalized

    headers = {"HTTP_GIT_PROTOCOL": "version=2"} if protocol == "v2" else {}
    if who is not None:
        basic = base64.b64encode(f"{who}:{world['tokens'][who]}".encode()).decode()
        headers["HTTP_AUTHORIZATION"] = f"Basic {basic}"
    # The view reads wsgi.input to its end, as gunicorn gives it; the test client's payload
    # refuses a read past its length.
    response = Client().post(
        "/olga/proj.git/git-upload-pack",
        data=body,
        content_type="application/x-git-upload-pack-request",
        **headers,
        **{"wsgi.input": io.BytesIO(body)},
    )
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, normalized(content)


@pytest.mark.parametrize(
    "moderated_user, blind",
    [("alice", (None, "otto", "maud", "olga", "alice")), ("hugo", (None, "otto", "maud"))],
)
def test_git_negotiation_answers_moderated_ids_as_missing_ones(moderated, moderated_user, blind):
    row = ID_ROUTES["git-rpc"]
    assert isinstance(row, Negotiation)
    repo = moderated["repo"]
    commit = moderated["values"][moderated_user]["id"]
    blob = run_git(["rev-parse", f"{commit}:work.txt"], repo=repo.disk_path).text.strip()
    main = run_git(["rev-parse", "main"], repo=repo.disk_path).text.strip()
    failures = []
    for protocol, lines in row.bodies:
        for hidden in (commit, commit.upper(), blob):
            missing = MISSING_SHA.upper() if hidden.isupper() else MISSING_SHA
            for who in blind:
                got = _git_answer(moderated, who, protocol, _git_body(lines, id=hidden, main=main))
                expected = _git_answer(moderated, who, protocol, _git_body(lines, id=missing, main=main))
                # git names an id in its own lower case, and echoes object-info's as sent.
                swapped = [
                    part.replace(missing.encode(), hidden.encode()).replace(
                        missing.lower().encode(), hidden.lower().encode()
                    )
                    for part in expected[1]
                ]
                if got != (expected[0], swapped):
                    failures.append(
                        f"{protocol} {lines} {who or 'anonymous'} {hidden}: {got[0]} vs {expected[0]}"
                    )
        # Staff are served what the others are refused.
        if "want {id}\n" in lines:
            status, parts = _git_answer(moderated, "sam", protocol, _git_body(lines, id=commit, main=main))
            if status != 200 or not any(part.startswith(b"\x01PACK") for part in parts):
                failures.append(f"{protocol} {lines} sam: not served ({status})")
    assert not failures, "\n".join(failures)
