"""The blame page: who last changed each line, streamed while `git blame --incremental` runs.

The page's head goes out before git has found anything; rows follow in file order as soon
as every line above them is attributed (repos.blame.Attribution), so a long blame shows its
first lines early and, when the time limit (BLAME_TIMEOUT) stops git, still shows everything
it found. The response is a generator around stream_git: when the client goes away, Django
closes the response, the generator closes, and git is killed and reaped.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime

from django.conf import settings
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe

from gitcore.git import stream_git
from repos import browse, ratelimits
from repos.blame import AgeScale, Attribution, Group, age_scale
from repos.views.browse import locate, page_context, url_for

log = logging.getLogger(__name__)

# Where the streamed rows go in the rendered template: repository text is escaped, so no
# name or path can contain this marker.
ROWS = mark_safe("<!--blame:rows-->")


@ratelimits.limit("blame")
def blame(request, owner: str, name: str, spec: str):
    repo, revision, entry = locate(request, owner, name, spec)
    if entry.kind == "tree":
        return redirect(url_for(repo, "tree", revision.name, entry.path))
    if entry.kind != "blob":
        raise Http404("a submodule")
    context = {
        **page_context(repo, revision, entry),
        "blob_url": url_for(repo, "blob", revision.name, entry.path),
        "raw_url": url_for(repo, "raw", revision.name, entry.path),
        "size": entry.size,
    }
    if (entry.size or 0) > settings.BLOB_MAX_DISPLAY_BYTES:
        return render(request, "repos/blame.html", {**context, "refusal": "too_large"})
    data = browse.read_blob(repo.disk_path, entry.sha)
    if browse.is_binary(data):
        return render(request, "repos/blame.html", {**context, "refusal": "binary"})
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the newline that ends the last line starts no line of its own
    if not lines:
        return render(request, "repos/blame.html", {**context, "refusal": "empty"})
    head, tail = render_to_string(
        "repos/blame.html", {**context, "lines": len(lines), "rows": ROWS}, request
    ).split(ROWS, 1)
    page = BlamePage(repo, revision, entry, lines, age_scale(repo.disk_path, revision.sha))
    response = StreamingHttpResponse(page.stream(head, tail), content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    return response


class BlamePage:
    def __init__(self, repo, revision, entry, lines: list[bytes], scale: AgeScale):
        self.repo, self.revision, self.entry = repo, revision, entry
        self.lines, self.scale = lines, scale
        self.blob_url = url_for(repo, "blob", revision.name, entry.path)

    def stream(self, head: str, tail: str) -> Iterator[str]:
        attribution = Attribution(len(self.lines))
        args = ["-c", "core.quotePath=false", "blame", "--incremental", self.revision.sha, "--"]
        with stream_git(
            [*args, self.entry.path],
            repo=self.repo.disk_path,
            stderr=subprocess.DEVNULL,
            timeout=settings.BLAME_TIMEOUT,
        ) as git:
            yield head + '<table class="blame">'  # git is at work meanwhile
            for groups in attribution.feed(iter(git.stdout.readline, b"")):
                if groups:
                    yield "".join(self.group_html(g) for g in groups)
            returncode = git.wait()
            timed_out = git.timed_out
        rest = "".join(self.group_html(g) for g in attribution.finish())
        note = ""
        if timed_out:
            note = (
                f'<p class="blame-cut" role="status">Blame took too long (over {settings.BLAME_TIMEOUT:g} s) '
                "and was stopped: lines without a commit beside them are not attributed. "
                f'<a href="{escape(self.blob_url)}">View the file</a>.</p>'
            )
        elif returncode != 0 or not attribution.complete:
            log.info("git blame exited %s on %s", returncode, self.repo.disk_path)
            note = '<p class="blame-cut" role="status">Blame could not be completed for this file.</p>'
        yield rest + "</table>" + note + tail

    def group_html(self, group: Group) -> str:
        commit = group.commit
        span = group.end - group.start + 1
        if commit is None:
            css = "blame-group blame-unknown"
            info = '<span class="muted">not attributed</span>'
        else:
            css = f"blame-group age-{self.scale.age_class(commit.time)}"
            when = datetime.fromtimestamp(commit.time, tz=UTC)
            prior = ""
            if commit.previous is not None:
                sha, path = commit.previous
                prior = (
                    f' <a class="blame-prior" href="{escape(url_for(self.repo, "blame", sha, path))}"'
                    ' title="Blame prior to this change" aria-label="Blame prior to this change">'
                    "&#8676;</a>"
                )
            info = (
                f'<a class="blame-sha" href="{escape(commit_url(self.repo, commit.sha))}"'
                f' title="{escape(commit.summary)}">{commit.sha[:10]}</a>{prior}'
                f' <time datetime="{when.isoformat()}">{when:%Y-%m-%d}</time>'
                f' <span class="blame-author">{escape(commit.author)}</span>'
                f' <span class="blame-subject">{escape(commit.summary)}</span>'
            )
        rows = []
        for n in range(group.start, group.end + 1):
            cell = f'<td class="blame-info" rowspan="{span}">{info}</td>' if n == group.start else ""
            text = escape(self.lines[n - 1].decode("utf-8", "replace"))
            rows.append(
                f'<tr>{cell}<td class="blame-num"><a id="L{n}" href="{escape(self.blob_url)}#L{n}">{n}</a></td>'
                f'<td class="blame-code">{text}</td></tr>'
            )
        return f'<tbody class="{css}">{"".join(rows)}</tbody>'


def commit_url(repo, sha: str) -> str:
    return reverse("repo-commit", kwargs={"owner": repo.owner.username, "name": repo.name, "sha": sha})
