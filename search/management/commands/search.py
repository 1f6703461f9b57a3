from django.core.management.base import CommandError

from repos import selectors
from repos.management.base import SubcommandCommand, subparser
from repos.models import Repository, User
from search import documents, indexing
from workspaces.selectors import taken_down_usernames


class Command(SubcommandCommand):
    help = (
        "The search index: search reindex [<owner>/<name>] [--fresh] rebuilds it from git and the "
        "database (every repository when none is named), in this process, to the end."
    )

    def add_subcommands(self, subparsers):
        reindex = subparser(subparsers, "reindex", "rebuild the search index", self)
        reindex.add_argument("full_name", metavar="OWNER/NAME", nargs="?")
        reindex.add_argument("--fresh", action="store_true", help="forget what is indexed first")

    def handle_reindex(self, *, full_name=None, fresh=False, **_options):
        if full_name:
            owner, _, name = full_name.partition("/")
            repo = selectors.repository_by_name(owner, name)
            if repo is None:
                raise CommandError(f"no repository named {full_name!r}")
            repos = [repo]
        else:
            repos = list(
                Repository.objects.filter(deleted_at__isnull=True).select_related("owner").order_by("pk")
            )
            for user in User.objects.all().iterator():
                documents.sync_user(user)
        for repo in repos:
            if fresh:
                indexing.index_reset(repo=repo)
            documents.sync_repository(repo)
            documents.resync_proposals(repo=repo, taken_down=frozenset(taken_down_usernames(repo)))
            files = deleted = commits = 0
            while True:
                outcome = indexing.index_update(repo=repo)
                if outcome.busy:
                    raise CommandError(f"{repo.full_name} is being indexed by another process; try again")
                files += outcome.files_written
                deleted += outcome.files_deleted
                commits += outcome.commits
                if not outcome.more:
                    break
            self.stdout.write(
                f"{repo.full_name}: {files} files written, {deleted} removed, {commits} commits"
            )
