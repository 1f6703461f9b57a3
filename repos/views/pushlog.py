"""The pushlog over HTTP: hg.mozilla.org-compatible json-pushes, and an Atom feed, each as the
viewer may see it (repos.pushlog.PushFilter: taken-down and hidden work is left out)."""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed

from gitcore.oids import object_format
from repos import pushlog, pushlog_query
from repos.views import repo_or_404
from repos.visibility import view_for

FEED_ITEMS = 50


def json_pushes(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    try:
        body = pushlog.render(
            repo,
            pushlog_query.parse_query(request.GET, object_format(repo.disk_path)),
            view_for(repo, request.user),
        )
    except pushlog_query.PushlogQueryError as exc:
        return JsonResponse({"error": {"code": "invalid", "message": str(exc)}}, status=400)
    response = JsonResponse(body)
    if repo.is_public:
        # Other systems follow public pushlogs from browsers too, as they do hg.mozilla.org's.
        response["Access-Control-Allow-Origin"] = "*"
    return response


def pushlog_atom(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    link = request.build_absolute_uri(
        reverse("repository", kwargs={"owner": repo.owner.username, "name": repo.name})
    )
    feed = Atom1Feed(
        title=f"{repo.full_name} pushlog",
        link=link,
        description=f"Pushes to {repo.full_name}",
        feed_url=request.build_absolute_uri(),
        feed_guid=f"{link}/pushlog",
    )
    shown = pushlog.PushFilter(repo, view_for(repo, request.user))
    pushes = (
        shown.visible(pushlog.logged_pushes(repo)).order_by("-pk").prefetch_related("ref_updates", "commits")
    )
    for push in pushes[:FEED_ITEMS]:
        # A rewritten ref is never shown as an ordinary update.
        refs = ", ".join(
            u.ref + (" (forced)" if u.forced else "") for u in shown.refs(push.ref_updates.all())
        )
        shas = shown.shas([c.sha for c in push.commits.all()])
        feed.add_item(
            title=f"Push {push.pk} (generation {push.generation}) by {push.pusher_name}: {refs}",  # type: ignore[attr-defined]  # annotated
            link=f"{link}/json-pushes?startID={push.pk - 1}&endID={push.pk}",
            description=f"{len(shas)} new commit(s) to {refs}\n" + "\n".join(shas[:50]),
            unique_id=f"{link}/pushlog/{push.pk}",
            pubdate=push.created_at,
            updateddate=push.created_at,
            author_name=push.pusher_name,
        )
    return HttpResponse(feed.writeString("utf-8"), content_type="application/atom+xml; charset=utf-8")
