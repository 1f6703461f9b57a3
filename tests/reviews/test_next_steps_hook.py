"""post-receive's next-step lines as a function (the live pushes are in test_next_steps.py):
what no git client can send, and the line budget."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

HOOK = Path(__file__).resolve().parents[2] / "repos" / "hooks" / "post_receive.py"
_spec = importlib.util.spec_from_file_location("post_receive_next_steps", HOOK)
post_receive = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(post_receive)

ZERO, NEW = "0" * 40, "1" * 40
ENV = {"HOSTSITE_NEXT_URL": "http://h/o/p", "HOSTSITE_PUSHER": "alice", "HOSTSITE_NEXT_BRANCH": "main"}


def steps(refs, env=ENV, server=(), budget=post_receive.NEXT_LINES):
    data = "".join(f"{ZERO} {NEW} {ref}\n" for ref in refs)
    return post_receive.next_steps(env, data, list(server), budget)


def test_control_and_invisible_characters_never_reach_the_terminal():
    # git's own ref rules keep C0 controls out; C1 (CSI), bidi and surrogate-escaped bytes are
    # stopped here whatever pre-receive allows.
    lines = steps(["refs/users/alice/a\x9b31mb\u202ec\udcff"])
    assert (
        lines[0]
        == "hostsite: a\\u009b31mb\\u202ec\\udcff: http://h/o/p/workspaces/alice/a%C2%9B31mb%E2%80%AEc%FF"
    )
    assert all(re.fullmatch(r"[ -~]*", line) for line in lines)


def test_only_the_pushers_own_moved_refs():
    assert steps(["refs/users/bob/x", "refs/heads/main", "refs/users/alice/"]) == []
    data = f"{NEW} {ZERO} refs/users/alice/gone\n{NEW} {NEW} refs/users/alice/same\n"
    assert post_receive.next_steps(ENV, data, []) == []
    assert steps(["refs/users/alice/x"], env={**ENV, "HOSTSITE_NEXT_URL": ""}) == []


def test_a_notice_and_nameless_lines_take_from_the_budget():
    ref = "refs/users/alice/main-0123456789ab"
    server = [f"hostsite.for={ref} main"]
    # proc-receive printed its "landed in" line: three more.
    assert len(steps([ref], server=server)) == 3
    # ...and with the push-options notice printed too, two.
    assert [line.split(":")[1].strip() for line in steps([ref], server=server, budget=3)] == [
        "main-0123456789ab",
        "open a proposal",
    ]


def test_proposal_lines_come_from_the_environment():
    env = {
        **ENV,
        "HOSTSITE_NEXT_PROPOSALS": f"7 3 {'2' * 40} refs/users/alice/x\n8 1 {NEW} refs/users/alice/y\nbad",
    }
    lines = steps(["refs/users/alice/x", "refs/users/alice/y"], env=env)
    assert lines[1] == "hostsite: proposal #7 updated: http://h/o/p/proposals/7 (revision 4)"
    assert (
        lines[3] == "hostsite: proposal #8 is at this commit already: http://h/o/p/proposals/8 (revision 1)"
    )


def test_lines_proc_receive_printed_for_mapped_branches_count_too():
    refs = [f"refs/users/alice/b{i}" for i in range(3)]
    # Three mapped branch pushes: proc-receive printed three lines, one is left: the summary.
    assert steps(refs, env={**ENV, "HOSTSITE_NEXT_MAPPED": "3"}) == [
        "hostsite: 3 refs: http://h/o/p/workspaces/alice"
    ]
    # One: its "landed in" line and two of ours.
    assert len(steps(refs[:1], env={**ENV, "HOSTSITE_NEXT_MAPPED": "1"})) == 2
    assert len(steps(refs[:1], env={**ENV, "HOSTSITE_NEXT_MAPPED": "x"})) == 2


def test_a_tip_already_on_the_branch_is_stale_not_proposed():
    env = {**ENV, "HOSTSITE_NEXT_LANDED": f"{NEW}\n{'3' * 40}"}
    assert steps(["refs/users/alice/main"], env=env) == [
        "hostsite: main: http://h/o/p/workspaces/alice/main",
        "hostsite: stale: already on main, nothing to propose; clean it up on that page",
    ]
    # Its open proposal still speaks first; another tip is offered a proposal as before.
    proposed = {**env, "HOSTSITE_NEXT_PROPOSALS": f"7 1 {'2' * 40} refs/users/alice/main"}
    assert steps(["refs/users/alice/main"], env=proposed)[1].startswith("hostsite: proposal #7 updated")
    assert steps(["refs/users/alice/x"], env={**ENV, "HOSTSITE_NEXT_LANDED": "3" * 40})[1].startswith(
        "hostsite: open a proposal"
    )
