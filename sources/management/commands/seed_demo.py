"""Create a demo admin and a demo repository with a little history, once.

`make run` calls this on every start; after the first time it does nothing, so the demo
password is printed exactly once. The history is imported (a push by the demo admin in the
pushlog, as any import records), which is why this command is sources', not repos'.
"""

import secrets
import shutil
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand

from gitcore.git import run_git
from repos import services
from repos.hooks import refspace
from repos.models import User
from sources import importing

DEMO_USER = "demo"
DEMO_REPO = "hello-hostsite"

FILES = [
    ("README.md", "# hello-hostsite\n\nA demo repository created by `make run`.\n", "Add a README"),
    ("hello.py", 'def greet(name):\n    return f"Hello, {name}!"\n', "Add greet()"),
    (
        "hello.py",
        'def greet(name: str) -> str:\n    """Say hello."""\n    return f"Hello, {name}!"\n\n\n'
        'if __name__ == "__main__":\n    print(greet("world"))\n',
        "Type greet() and run it as a script",
    ),
    (
        "CONTRIBUTING.md",
        f"Push to your workspace:\n\n    git push origin HEAD:{refspace.FOR}main\n",
        "Explain how to contribute",
    ),
]


class Command(BaseCommand):
    help = "Create the demo admin and repository if no users exist yet (idempotent)."

    def handle(self, *args, **options):
        if User.objects.exists():
            return
        password = secrets.token_urlsafe(12)
        user = services.user_create(username=DEMO_USER, email="", password=password, is_staff=True)
        source = Path(tempfile.mkdtemp(prefix="hostsite-demo-"))
        try:
            self._build_history(source)
            importing.import_now(
                owner=user,
                name=DEMO_REPO,
                description="A demo repository with a little history.",
                source=str(source),
            )
        finally:
            shutil.rmtree(source, ignore_errors=True)
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo admin created: username '{DEMO_USER}', password '{password}' "
                "(shown once; change it after signing in)."
            )
        )

    def _build_history(self, work: Path) -> None:
        run_git(["init", "--quiet", "--initial-branch=main", str(work)])
        base_date = 1_700_000_000
        for i, (name, content, message) in enumerate(FILES):
            (work / name).write_text(content)
            run_git(["-C", str(work), "add", name])
            date = f"{base_date + i * 86_400} +0000"
            run_git(
                ["-C", str(work), "commit", "--quiet", "-m", message],
                env={
                    "GIT_AUTHOR_DATE": date,
                    "GIT_COMMITTER_DATE": date,
                    "GIT_AUTHOR_NAME": "Demo Admin",
                    "GIT_AUTHOR_EMAIL": "admin@example.invalid",
                },
            )
        run_git(["-C", str(work), "tag", "-a", "v0.1", "-m", "First release"])
