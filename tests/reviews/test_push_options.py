"""Push options travel from post-receive through the updates file: bounded, one line each, and
never able to pass for a ref update or for the server's own `hostsite.*` lines."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from repos import pushes

HOOK = Path(__file__).resolve().parents[2] / "repos" / "hooks" / "post_receive.py"
_spec = importlib.util.spec_from_file_location("post_receive_under_test", HOOK)
post_receive = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(post_receive)

OLD, NEW = "1" * 40, "2" * 40


def written(options: list[str]) -> str:
    env = {"GIT_PUSH_OPTION_COUNT": str(len(options))}
    env.update({f"GIT_PUSH_OPTION_{i}": value for i, value in enumerate(options)})
    updates = f"{OLD} {NEW} refs/users/alice/x\n"
    return updates + "".join(f"option {o}\n" for o in post_receive.push_options(env))


def test_options_cannot_forge_ref_updates_or_server_lines():
    forged = f"{OLD} {NEW} refs/heads/main"
    text = written(
        [
            f"title=a\n{forged}",
            f"title=b\u2028{forged}",
            f"title=c\x85{forged}",
            f"title=d\r{forged}",
            "hostsite.for=refs/users/alice/x main",
        ]
    )
    assert pushes.parse_updates(text) == [pushes.Update(OLD, NEW, "refs/users/alice/x")]
    options = pushes.parse_push_options(text)
    assert len(options) == 4 and all(o.startswith("title=") for o in options)
    assert not any("hostsite.for" in o for o in options)


def test_options_are_bounded():
    assert (
        len(
            post_receive.push_options(
                {"GIT_PUSH_OPTION_COUNT": "1000", **{f"GIT_PUSH_OPTION_{i}": "k=v" for i in range(1000)}}
            )
        )
        == 32
    )
    assert post_receive.push_options({"GIT_PUSH_OPTION_COUNT": "x"}) == []
    assert post_receive.push_options({"GIT_PUSH_OPTION_COUNT": "-5"}) == []
    [long] = post_receive.push_options(
        {"GIT_PUSH_OPTION_COUNT": "1", "GIT_PUSH_OPTION_0": "t=" + "x" * 100_000}
    )
    assert len(long) == post_receive.MAX_OPTION_CHARS
