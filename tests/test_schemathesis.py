"""The API against its own OpenAPI schema: schemathesis (`--checks all`) on the live server.

A few thousand generated requests, positive and negative, with a fixed seed, authenticated as a
user who owns a repository (so authenticated routes run past their permission checks): any 5xx,
any response the schema does not describe, any undocumented status fails the test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from repos import services
from repos.models import Role
from tests.factories import UserFactory

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
SEED = 20240611
MAX_EXAMPLES = 25

# Path parameters that name real things most of the time, so generated requests reach the
# views behind the lookups instead of a 404 from every one; the rest stay random.
CONFIG = """
[dictionaries.owners]
values = ["alice"]
[dictionaries.names]
values = ["demo"]
[dictionaries.usernames]
values = ["alice", "bob"]

[parameters]
"path.owner" = { dictionary = "owners", probability = 0.8 }
"path.name" = { dictionary = "names", probability = 0.8 }
"path.username" = { dictionary = "usernames", probability = 0.6 }

# A schema-valid request may still be refused for what its values mean (a name already
# taken, a ref that does not exist, a webhook URL that is not http): 400, 409 or 422 with the
# error format, never a 5xx.
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "400", "401", "403", "404", "409", "422"]
"""


@pytest.fixture
def alice_token():
    alice = UserFactory(username="alice")
    bob = UserFactory(username="bob")
    repo = services.repository_create(owner=alice, name="demo")
    services.membership_set(repo=repo, user=bob, role=Role.from_label("reader"))
    return services.token_create(user=alice, scope="write")[1]


CPYTHON_AST_BUG = "SystemError: AST constructor recursion depth mismatch"


@pytest.mark.timeout(600)
def test_the_api_conforms_to_its_schema(live_server_url, alice_token, tmp_path):
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    argv = [
        str(SCHEMATHESIS),
        "--no-color",
        "--config-file",
        str(config),
        "run",
        f"{live_server_url}/api/v1/schema/",
        "--checks",
        "all",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--generation-database",
        "none",
        "--workers",
        "2",
        "--header",
        f"Authorization: Bearer {alice_token}",
        "--request-timeout",
        "30",
        "--suppress-health-check",
        "all",
        "--output-truncate",
        "false",
    ]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=280, cwd=tmp_path)
    output = result.stdout + result.stderr
    if result.returncode != 0 and CPYTHON_AST_BUG in output:
        # CPython 3.11's ast.parse can fail spuriously when called from two threads at once;
        # hypothesis calls it to describe a filter. Not the API's doing: run once more.
        result = subprocess.run(argv, capture_output=True, text=True, timeout=280, cwd=tmp_path)
        output = result.stdout + result.stderr
    assert result.returncode == 0, output[-20000:]
    # The run did test something: schemathesis prints its case count in the summary.
    assert "test cases" in output.lower(), output[-4000:]
