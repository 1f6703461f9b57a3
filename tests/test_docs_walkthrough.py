"""The README's walkthrough, run as a newcomer would type it, against a live server.

Every ```sh block of the walkthrough section runs in order in one bash (set -euo pipefail), so
`cd` and variables carry from one block to the next as in a terminal. The first block defines
the server's address; the test puts the live server's there. manage.py in the blocks reaches
the test database through live_env, as the live server does.
"""

from __future__ import annotations

import re
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.live import BASE_DIR

README = BASE_DIR / "README.md"
SECTION = "## Five-minute walkthrough"
BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.DOTALL | re.MULTILINE)
ASSIGNMENT = re.compile(r"^([A-Z_]+)=(.*)$")


def walkthrough_blocks(text: str) -> list[str]:
    start = text.index(SECTION) + len(SECTION)
    end = text.find("\n## ", start)
    return BLOCK.findall(text[start : end if end != -1 else len(text)])


def with_overrides(block: str, overrides: dict[str, str]) -> str:
    """The block with the named variables set to the test's values; each must be defined there."""
    lines, seen = [], set()
    for line in block.splitlines():
        match = ASSIGNMENT.match(line)
        if match and match.group(1) in overrides:
            seen.add(match.group(1))
            line = f"{match.group(1)}={overrides[match.group(1)]}"
        lines.append(line)
    missing = set(overrides) - seen
    assert not missing, f"the walkthrough's first block no longer defines {sorted(missing)}"
    return "\n".join(lines) + "\n"


def script(blocks: list[str]) -> str:
    # The ERR trap names the block that failed; set -e then stops the script there.
    parts = ["set -euo pipefail", "trap 'echo \"walkthrough block $BLOCK failed\" >&2' ERR"]
    for number, block in enumerate(blocks, 1):
        parts += [f"BLOCK={number}", block]
    return "\n".join(parts) + "\n"


def test_walkthrough_blocks_are_found():
    blocks = walkthrough_blocks(README.read_text())
    assert len(blocks) >= 6
    assert ASSIGNMENT.match(blocks[0].splitlines()[0]), "the first block defines the server's address"


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_the_readme_walkthrough_runs_against_a_live_server(live_env, live_server_url, git_home, tmp_path):
    from repos.models import Repository
    from reviews.models import Proposal

    host = live_server_url.removeprefix("http://")
    blocks = walkthrough_blocks(README.read_text())
    blocks[0] = with_overrides(blocks[0], {"HOSTSITE": host})
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**live_env, **git_home, "TMPDIR": str(scratch)}
    result = subprocess.run(
        ["bash", "-c", script(blocks)],
        env=env,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == 0, output

    repo = Repository.objects.get(owner__username="alice", name="hello")
    proposal = Proposal.objects.get(repository=repo, number=1)
    assert proposal.state == "merged", output
    assert proposal.source_ref == "refs/users/bob/greeting"
    subjects = subprocess.run(
        ["git", "log", "--format=%s", "refs/heads/main"],
        cwd=repo.disk_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert "Greet from Bob" in subjects and "Promise more" not in subjects
    # The nameless head is unfinished work: Show work (page and text) shows it.
    assert "Promise more" in result.stdout, output
    with urllib.request.urlopen(f"{live_server_url}/alice/hello/work", timeout=30) as resp:
        assert resp.status == 200
        assert "Promise more" in resp.read().decode()


def test_only_the_walkthrough_section_is_run(tmp_path):
    text = "# x\n```sh\nfalse\n```\n## Five-minute walkthrough\n```sh\nA=1\n```\n```\nnot sh\n```\n## Next\n```sh\nfalse\n```\n"
    assert walkthrough_blocks(text) == ["A=1\n"]
    assert with_overrides("A=1\necho $A\n", {"A": "2"}) == "A=2\necho $A\n"
    with pytest.raises(AssertionError):
        with_overrides("B=1\n", {"A": "2"})


def test_a_failing_block_fails_the_script_and_is_named(tmp_path: Path):
    result = subprocess.run(
        ["bash", "-c", script(["true\n", "false | cat\necho after\n"])],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=30,
    )
    assert result.returncode != 0
    assert "after" not in result.stdout
    assert "walkthrough block 2 failed" in result.stderr
