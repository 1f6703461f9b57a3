"""`manage.py node ...`: the site's nodes from the command line (docs/operations.md,
"Beyond one machine")."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import timedelta

from django.conf import settings
from django.core.management.base import CommandError
from django.db import transaction
from django.db.models import Count, F, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from hostsite.queues import replica_queue
from replication import nodes as site_nodes
from replication import status
from replication.models import Node, NodeRole, ReplicaState
from repos import changelog, enqueue, selectors
from repos.management.base import SubcommandCommand, subparser
from repos.models import Repository, RepositoryChange

# How long fence-check waits for the old primary to answer: a primary that is up answers its
# home page well within this; one that does not is as good as down for a client too.
PROBE_TIMEOUT = 3.0
BEHIND_SHOWN = 50


def _node(name: str) -> Node:
    node = Node.objects.filter(name=name).first()
    if node is None:
        known = ", ".join(Node.objects.order_by("name").values_list("name", flat=True)) or "none yet"
        raise CommandError(f"no node named {name!r} (known: {known})")
    return node


def _ago(when) -> str:
    if when is None:
        return "never"
    return f"{(timezone.now() - when).total_seconds():.0f} s ago"


class Command(SubcommandCommand):
    help = (
        "The site's nodes: node status [--json]; node resync <owner>/<name> [--node NAME]; "
        "node retire|unretire <name>; node fence-check (before promoting this replica)"
    )

    def add_subcommands(self, subparsers):
        show = subparser(subparsers, "status", "the nodes and how far each replica is behind", self)
        show.add_argument("--json", action="store_true", dest="as_json", help="what /status.json answers")
        resync = subparser(subparsers, "resync", "make replicas copy a repository afresh", self)
        resync.add_argument("full_name", metavar="OWNER/NAME")
        resync.add_argument(
            "--node",
            action="append",
            dest="nodes",
            metavar="NAME",
            help="this replica (repeatable); default: every live replica",
        )
        retire = subparser(subparsers, "retire", "stop sending a node jobs and awaiting it", self)
        retire.add_argument("name")
        unretire = subparser(subparsers, "unretire", "count a retired node again", self)
        unretire.add_argument("name")
        subparser(
            subparsers,
            "fence-check",
            "on the replica to promote: is the old primary gone and does this node hold everything?",
            self,
        )

    # -- status ---------------------------------------------------------------------------

    def handle_status(self, *, as_json: bool = False, **_):
        site = status.site_status()
        if as_json:
            self.stdout.write(json.dumps(site.as_json(), indent=2, sort_keys=True))
            return
        self.stdout.write(
            f"{site.repositories} repositories; answered by {site.node} ({site.role}); "
            f"a node silent for {site.down_after_seconds} s is down"
        )
        for node in site.nodes:
            state = "retired" if node.retired else ("up" if node.up else "down")
            self.stdout.write(
                f"{node.name:<20} {node.role:<8} {state:<8} seen {_ago(node.last_seen_at)}"
                f"  git {node.git_version or '?'}  {node.url}"
            )
            figures = node.replica
            if figures is None:
                continue
            lag = "none" if figures.lag_seconds is None else f"{figures.lag_seconds:.0f} s"
            self.stdout.write(
                f"    current {figures.current}, behind {figures.behind}, missing {figures.missing},"
                f" lag {lag}, sync errors {figures.errors_count}"
            )
            for error in figures.errors:
                self.stdout.write(f"    error {error.repository} (holds {error.generation}): {error.error}")
        self.stdout.write(f"pending confirmations: {site.pending_count}")
        for change in site.pending:
            awaiting = ", ".join(change.awaiting) or "nobody (completes with the next confirmation)"
            self.stdout.write(
                f"    {change.kind} #{change.generation} of {change.repository}: awaiting {awaiting}"
            )

    # -- resync ---------------------------------------------------------------------------

    def handle_resync(self, *, full_name: str, nodes: list[str] | None = None, **_):
        owner, _sep, name = full_name.partition("/")
        repo = selectors.repository_by_name(owner, name) if owner and name and "/" not in name else None
        if repo is None:
            raise CommandError(f"no repository {full_name!r} (expected <owner>/<name>)")
        if nodes:
            targets = [_node(node_name) for node_name in dict.fromkeys(nodes)]
            for node in targets:
                if node.role != NodeRole.REPLICA:
                    raise CommandError(f"{node.name} is the {node.role}, not a replica")
                if node.retired_at is not None:
                    raise CommandError(f"{node.name} is retired: `node unretire {node.name}` first")
        else:
            # Now, not the process's cached answer of a second ago.
            site_nodes.forget_live_replicas()
            targets = sorted(site_nodes.live_replicas(), key=lambda node: node.name)
            if not targets:
                raise CommandError("no live replica (none seen recently); name one with --node")
        # Forgotten first: until the fresh copy is made, the replica holds nothing it can vouch
        # for, and reads of the repository go to the primary.
        ReplicaState.objects.filter(node__in=targets, repository=repo).delete()
        for node in targets:
            enqueue.send(
                "replication.tasks.sync_repository",
                repo.pk,
                repo.generation,
                kwargs={"fresh": True},
                queue=replica_queue(node.name),
            )
            self.stdout.write(
                f"{node.name}: copying {repo.full_name} afresh (generation {repo.generation}); "
                f"queued on {replica_queue(node.name)}"
            )

    # -- retire / unretire ------------------------------------------------------------------

    def handle_retire(self, *, name: str, **_):
        with transaction.atomic():
            node = _node(name)
            if node.retired_at is not None:
                self.stdout.write(f"{node.name} was retired already ({_ago(node.retired_at)})")
                return
            node.retired_at = timezone.now()
            node.save(update_fields=["retired_at"])
            completed = complete_confirmed_changes()
        self.stdout.write(f"{node.name} is retired: it gets no jobs and its confirmations are not awaited")
        if completed:
            self.stdout.write(
                f"{completed} pending change(s) completed: every remaining replica had confirmed"
            )

    def handle_unretire(self, *, name: str, **_):
        node = _node(name)
        if node.retired_at is None:
            self.stdout.write(f"{node.name} is not retired")
            return
        Node.objects.filter(pk=node.pk).update(retired_at=None)
        self.stdout.write(
            f"{node.name} counts again: it gets jobs once its worker runs, catches up from the log, "
            "and is awaited for changes from now on"
        )

    # -- fence-check ------------------------------------------------------------------------

    def handle_fence_check(self, **_):
        me = settings.HOSTSITE_NODE
        problems: list[str] = []
        if settings.HOSTSITE_ROLE != "replica" or not settings.PRIMARY_URL:
            raise CommandError(
                "run fence-check on the replica to promote, with its replica settings "
                "(HOSTSITE_ROLE=replica, PRIMARY_URL naming the old primary)"
            )
        down_after = timedelta(seconds=settings.NODE_DOWN_SECONDS)
        primaries = Node.objects.filter(role=NodeRole.PRIMARY, retired_at__isnull=True).exclude(name=me)
        if not primaries:
            self.stdout.write("no primary is recorded in the nodes table")
        for primary in primaries:
            if primary.last_seen_at and primary.last_seen_at > timezone.now() - down_after:
                problems.append(
                    f"primary {primary.name} was seen {_ago(primary.last_seen_at)} "
                    f"(within NODE_DOWN_SECONDS={settings.NODE_DOWN_SECONDS}): it is alive"
                )
            else:
                self.stdout.write(f"ok: primary {primary.name} last seen {_ago(primary.last_seen_at)}")
        answer = probe(settings.PRIMARY_URL)
        if answer:
            problems.append(f"PRIMARY_URL {settings.PRIMARY_URL} answers ({answer}): fence it first")
        else:
            self.stdout.write(f"ok: PRIMARY_URL {settings.PRIMARY_URL} does not answer")
        behind_count, behind = not_held(me)
        if behind_count:
            problems.append(
                f"{me} does not hold {behind_count} repositor{'y' if behind_count == 1 else 'ies'} "
                "at their current generation: promoting it now would lose those changes"
            )
            for full_name, held, current in behind:
                shown = "nothing" if held is None else f"generation {held}"
                self.stdout.write(f"    {full_name}: holds {shown} of {current}")
            if behind_count > len(behind):
                self.stdout.write(f"    ... and {behind_count - len(behind)} more")
        else:
            self.stdout.write(f"ok: {me} holds every repository at its current generation")
        if problems:
            for problem in problems:
                self.stderr.write(f"refused: {problem}")
            raise CommandError(f"not safe to promote {me}: {len(problems)} problem(s) above")
        self.stdout.write(f"safe to promote {me}: set HOSTSITE_ROLE=primary, unset PRIMARY_URL, restart")


def complete_confirmed_changes() -> int:
    """Complete every pending change that each counted (registered, not retired) replica has
    confirmed: after a retirement, the ones only that node was still awaited for."""
    counted = site_nodes.registered_replicas()
    needed = counted.count()
    pending = (
        RepositoryChange.objects.filter(needs_confirmation=True, completed_at__isnull=True)
        .annotate(confirmed=Count("confirmations", filter=Q(confirmations__node__in=counted)))
        .filter(confirmed__gte=needed)
        .values_list("pk", flat=True)
    )
    done = 0
    for change_id in list(pending):
        changelog.complete(change_id)
        done += 1
    return done


def not_held(node_name: str, limit: int = BEHIND_SHOWN) -> tuple[int, list[tuple[str, int | None, int]]]:
    """Repositories this node holds below their current generation (or not at all): how many,
    and the first `limit` as (owner/name, held or None, current)."""
    held = Subquery(
        ReplicaState.objects.filter(node__name=node_name, repository=OuterRef("pk")).values("generation")[:1]
    )
    behind = (
        Repository.objects.annotate(held=Coalesce(held, Value(-1), output_field=IntegerField()))
        .filter(held__lt=F("generation"))
        .order_by("pk")
    )
    rows = behind.values_list("owner__username", "name", "held", "generation")[:limit]
    shown = [(f"{owner}/{name}", None if h < 0 else h, g) for owner, name, h, g in rows]
    return (behind.count() if len(shown) == limit else len(shown)), shown


def probe(url: str) -> str:
    """What answers at `url` ("HTTP 200", "HTTP 400": any answer at all), or "" when nothing
    does. Any HTTP status counts: a primary that refuses our Host header is still alive.
    Proxies from the environment are bypassed: a proxy answering 502 for a dead primary would
    look alive, and the primary's URL is an internal one anyway."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{url}/", timeout=PROBE_TIMEOUT) as response:
            return f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError):
        return ""
