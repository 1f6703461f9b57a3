"""gitcore.advertisement writes the push advertisement itself for pushers shown a few namespaces:
it must be byte for byte what git receive-pack writes with the same configuration."""

from __future__ import annotations

import pytest

from gitcore import advertisement
from gitcore.git import run_git
from repos import services
from repos.pipeline.call import service_argv, with_limits
from tests.factories import UserFactory
from tests.gitutil import make_history
from workspaces.access.hiding import git_config

pytestmark = pytest.mark.django_db

CONTRIBUTOR = [
    ("receive.hideRefs", v) for v in ("refs/", "!refs/heads/", "!refs/tags/", "!refs/users/alice/")
]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (CONTRIBUTOR, ["refs/heads", "refs/tags", "refs/users/alice"]),
        ([("transfer.hideRefs", "refs"), ("receive.hideRefs", "!refs/heads//")], ["refs/heads"]),
        ([("receive.hideRefs", "refs/")], []),
        (
            [("core.alternateRefsPrefixes", "refs/heads/"), *CONTRIBUTOR],
            ["refs/heads", "refs/tags", "refs/users/alice"],
        ),
        # Shapes git must handle itself.
        ([], None),
        ([("receive.hideRefs", "refs/users/"), ("receive.hideRefs", "!refs/users/alice/")], None),
        ([("receive.hideRefs", "refs/"), ("receive.hideRefs", "refs/heads/")], None),
        ([("receive.hideRefs", "refs/"), ("receive.hideRefs", "!^refs/heads/")], None),
        ([("receive.hideRefs", "refs/"), ("receive.hideRefs", "!refs/users/*")], None),
        ([("receive.hideRefs", "refs/"), ("receive.hideRefs", "!HEAD")], None),
    ],
)
def test_shown_prefixes(config, expected):
    assert advertisement.shown_prefixes(config) == expected


@pytest.fixture
def busy_repo(tmp_path, git_home):
    """A hostsite repository (its real config) with refs of every kind, packed and loose."""
    owner = UserFactory(username="owner")
    repo = services.repository_create(owner=owner, name="adv")
    work = tmp_path / "work"
    refs = make_history(work, git_home)
    path = repo.disk_path
    # Fetched in, not pushed: the repository's hooks want the platform's environment.
    run_git(
        [
            "fetch",
            "--quiet",
            str(work),
            "refs/heads/trunk:refs/heads/main",
            "refs/heads/feature:refs/heads/feature",
            "refs/tags/v1.0:refs/tags/v1.0",
        ],
        repo=path,
    )
    feature = refs["refs/heads/feature"]
    for ref in (
        "refs/users/alice/a",
        "refs/users/alice/b/c",
        "refs/users/alicex/y",
        "refs/users/bob/x",
        "refs/archive/z",
        "refs/tags/light",
        "refs/heads/zz/deep",
    ):
        run_git(["update-ref", ref, feature], repo=path)
    run_git(["pack-refs", "--all"], repo=path)
    # Some loose ones too, and a symbolic ref, after packing.
    run_git(["update-ref", "refs/users/alice/loose", refs["refs/heads/trunk"]], repo=path)
    run_git(["update-ref", "refs/heads/aaa", feature], repo=path)
    run_git(["symbolic-ref", "refs/heads/alias", "refs/heads/main"], repo=path)
    return repo


def git_advertisement(path, config, protocol):
    env = {"GIT_PROTOCOL": protocol} if protocol else None
    argv = service_argv("receive-pack", path, advertise=True, config=config)
    return run_git(argv, env=env).stdout


@pytest.mark.parametrize("protocol", [None, "version=1"])
def test_same_bytes_as_receive_pack(busy_repo, protocol):
    path = busy_repo.disk_path
    shown = advertisement.shown_prefixes(CONTRIBUTOR)
    ours = advertisement.write(path, shown, with_limits("receive-pack", CONTRIBUTOR), protocol)
    theirs = git_advertisement(path, CONTRIBUTOR, protocol)
    assert ours == theirs
    text = ours.decode()
    assert "refs/users/alice/loose" in text and "refs/heads/alias" in text and "refs/tags/light" in text
    assert "refs/users/bob/" not in text and "refs/users/alicex/" not in text and "refs/archive/" not in text
    assert ("version 1" in text) == (protocol == "version=1")


def test_aliases_read_as_if_the_refs_were_branches(busy_repo):
    """A mapped pusher's workspace refs, shown as branches too: byte for byte what receive-pack
    writes once those branches really exist, an alias replacing a branch of the same name."""
    path = busy_repo.disk_path
    trunk = run_git(["rev-parse", "refs/heads/main"], repo=path).text.strip()
    run_git(["update-ref", "refs/users/alice/feature", trunk], repo=path)  # unlike refs/heads/feature
    shown = advertisement.shown_prefixes(CONTRIBUTOR)
    aliases = [("refs/heads/", "refs/users/alice/")]
    ours = advertisement.write(path, shown, with_limits("receive-pack", CONTRIBUTOR), None, aliases=aliases)
    listed = run_git(["for-each-ref", "--format=%(objectname) %(refname)", "refs/users/alice/"], repo=path)
    for line in listed.text.splitlines():
        oid, ref = line.split(" ")
        run_git(["update-ref", "--no-deref", "refs/heads/" + ref[len("refs/users/alice/") :], oid], repo=path)
    assert ours == git_advertisement(path, CONTRIBUTOR, None)
    text = ours.decode()
    assert f"{trunk} refs/heads/feature\n" in text and f"{trunk} refs/users/alice/feature\n" in text
    assert "refs/heads/b/c" in text and "refs/heads/loose" in text and "refs/heads/x" not in text


def test_same_bytes_when_nothing_is_shown(busy_repo):
    config = [("receive.hideRefs", "refs/"), ("receive.hideRefs", "!refs/users/nobody/")]
    path = busy_repo.disk_path
    ours = advertisement.write(path, ["refs/users/nobody"], with_limits("receive-pack", config), None)
    assert ours == git_advertisement(path, config, None)
    assert b"capabilities^{}" in ours


def test_probe_follows_the_repository_config(busy_repo):
    """The capabilities are cached by the config's content: a changed config is seen at once."""
    path = busy_repo.disk_path
    heads = [("receive.hideRefs", "refs/"), ("receive.hideRefs", "!refs/heads/")]
    before = advertisement.write(path, ["refs/heads"], heads, None)
    assert b" push-options" in before and b" atomic" in before
    run_git(["config", "receive.advertisePushOptions", "false"], repo=path)
    run_git(["config", "receive.advertiseAtomic", "false"], repo=path)
    after = advertisement.write(path, ["refs/heads"], heads, None)
    assert b" push-options" not in after and b" atomic" not in after
    assert after == git_advertisement(path, heads, None)


def test_repository_with_alternates_is_left_to_git(busy_repo, tmp_path):
    path = busy_repo.disk_path
    (path / "objects" / "info" / "alternates").write_text(f"{tmp_path}/elsewhere/objects\n")
    assert advertisement.write(path, ["refs/heads"], CONTRIBUTOR, None) is None


def test_workspaces_asks_for_the_prefix_path_on_advertisement_only(busy_repo):
    alice = UserFactory(username="alice")
    get = git_config(busy_repo, alice, "reader", service="receive-pack", advertise=True)
    post = git_config(busy_repo, alice, "reader", service="receive-pack", advertise=False)
    assert advertisement.shown_prefixes(get) == ["refs/heads", "refs/tags", "refs/users/alice"]
    assert advertisement.shown_prefixes(post) is None
    assert ("receive.hideRefs", "refs/users/") in post and ("receive.hideRefs", "!refs/users/alice/") in post


def test_every_pusher_gets_the_same_small_advertisement(busy_repo):
    """Maintainers and admins too: their own workspace, branches, tags; no other workspace."""
    for role in ("reader", "maintainer", "admin"):
        mona = UserFactory()
        get = git_config(busy_repo, mona, role, service="receive-pack", advertise=True)
        assert advertisement.shown_prefixes(get) == ["refs/heads", "refs/tags", f"refs/users/{mona.username}"]


def test_push_routes_to_proc_receive_only_what_it_must(busy_repo):
    alice, mona = UserFactory(username="alice"), UserFactory(username="mona")

    def routed(user, role, commands, atomic=False):
        config = git_config(
            busy_repo, user, role, service="receive-pack", advertise=False, commands=commands, atomic=atomic
        )
        return [value for key, value in config if key == "receive.procReceiveRefs"]

    z = "0" * 40
    assert routed(alice, "reader", [(z, z, "refs/users/alice/x")]) == ["refs/for/", "refs/heads/"]
    # A maintainer's push to their own refs and branches never starts the hook...
    assert routed(mona, "maintainer", [(z, z, "refs/heads/x"), (z, z, "refs/users/mona/x")]) == ["refs/for/"]
    # ...a write to others' workspaces routes exactly those workspaces.
    commands = [(z, z, "refs/users/bob/x"), (z, z, "refs/users/bob/y/z"), (z, z, "refs/users/carl/w")]
    assert routed(mona, "maintainer", commands) == ["refs/for/", "refs/users/bob/", "refs/users/carl/"]
    # Atomic: everything, when the hook is involved at all.
    assert routed(mona, "maintainer", commands, atomic=True) == ["refs/"]
    assert routed(mona, "maintainer", [(z, z, "refs/heads/x")], atomic=True) == ["refs/for/"]
    assert routed(alice, "reader", [(z, z, "refs/users/alice/x")], atomic=True) == [
        "refs/for/",
        "refs/heads/",
    ]
    assert routed(alice, "reader", [(z, z, "refs/heads/x")], atomic=True) == ["refs/"]
    # Admins' deletions in namespaces they are no longer shown (recorded with the real old tip).
    odd = [(z, z, "refs/pull/1/head"), (z, z, "refs/heads/x"), (z, z, "refs/a=b/c"), (z, z, "refs/x")]
    odd += [(z, z, "refs/imported/pull/3/head"), (z, z, "refs/archive/a/1")]  # hidden: git refuses them
    assert routed(UserFactory(), "admin", odd) == ["refs/for/", "refs/pull/"]


def git_v2_capabilities(path, config):
    argv = service_argv("upload-pack", path, advertise=True, config=config)
    return run_git(argv, env={"GIT_PROTOCOL": "version=2"}).stdout


@pytest.mark.parametrize(
    "config", [[], [("uploadpack.advertiseBundleURIs", "true")], [("uploadpack.allowFilter", "false")]]
)
def test_v2_capabilities_same_bytes_as_upload_pack(busy_repo, config):
    path = busy_repo.disk_path
    ours = advertisement.upload_pack_v2(path, config, "version=2")
    assert ours == git_v2_capabilities(path, config)
    assert ours.startswith(b"000eversion 2\n") and b"fetch=" in ours and b"refs/" not in ours
    assert (b"filter" in ours) == (config != [("uploadpack.allowFilter", "false")])
    # The repository's own config counts, and a change to it is seen at once.
    run_git(["config", "uploadpack.allowFilter", "false"], repo=path)
    assert b"filter" not in advertisement.upload_pack_v2(path, config, "version=2")
    assert advertisement.upload_pack_v2(path, config, "version=2") == git_v2_capabilities(path, config)


def pkt(text: str) -> bytes:
    return b"%04x" % (len(text) + 4) + text.encode()


def ls_refs_body(*prefixes: str, args=("peel", "symrefs", "unborn")) -> bytes:
    return (
        pkt("command=ls-refs\n")
        + pkt("agent=git/2.39.5\n")
        + pkt("object-format=sha1\n")
        + b"0001"
        + b"".join(pkt(f"{a}\n") for a in args)
        + b"".join(pkt(f"ref-prefix {p}\n") for p in prefixes)
        + b"0000"
    )


CLONE = ("HEAD", "refs/heads/", "refs/tags/")


@pytest.mark.parametrize(
    ("body", "covered"),
    [
        (ls_refs_body(*CLONE), True),
        (ls_refs_body("refs/heads/main"), True),
        (ls_refs_body(), False),  # every ref
        (ls_refs_body("refs/users/"), False),
        (ls_refs_body("HEAD", "refs/archive/"), False),
        (pkt("command=fetch\n") + b"0001" + pkt("want " + "a" * 40 + "\n") + b"0000", False),
        (b"zzzz", False),
    ],
)
def test_ls_refs_requests_covered(body, covered):
    assert (advertisement.ls_refs_prefixes(body) is not None) == covered


def test_ls_refs_answer_is_upload_packs_and_follows_every_ref_change(busy_repo):
    path = busy_repo.disk_path
    argv = service_argv("upload-pack", path, advertise=False, config=[])
    env = {"GIT_PROTOCOL": "version=2"}
    body = ls_refs_body(*CLONE)

    def git_answer():
        return run_git(argv, env=env, input=body).stdout

    def check():
        first = advertisement.ls_refs(path, argv, env, body)
        assert first == git_answer() == advertisement.ls_refs(path, argv, env, body)
        return first

    start = check()
    assert b"refs/heads/main" in start and b"refs/users/" not in start and b"peeled:" in start
    feature = run_git(["rev-parse", "refs/heads/feature"], repo=path).text.strip()
    run_git(["update-ref", "refs/heads/new", feature], repo=path)  # a loose ref
    assert b"refs/heads/new" in check()
    run_git(["pack-refs", "--all"], repo=path)  # the same refs, another file
    assert b"refs/heads/new" in check()
    run_git(["update-ref", "-d", "refs/heads/new"], repo=path)  # deleted from packed-refs
    assert b"refs/heads/new" not in check()
    run_git(["update-ref", "refs/heads/main", feature], repo=path)  # moved in place
    assert f"{feature} refs/heads/main".encode() in check()
    run_git(["symbolic-ref", "HEAD", "refs/heads/feature"], repo=path)
    assert b"symref-target:refs/heads/feature" in check()
    run_git(["update-ref", "refs/users/alice/zzz", feature], repo=path)  # not what it answers about
    assert check() == advertisement.ls_refs(path, argv, env, body)
    assert advertisement.ls_refs(path, argv, env, ls_refs_body("refs/users/")) is None


def test_ref_state_of_a_reftable_layout(tmp_path):
    """git >= 2.45 makes reftable repositories: refs/heads is a placeholder file there, and the
    refs live in reftable/ (tables.list is replaced on every update). Runs on any git."""
    (tmp_path / "refs").mkdir()
    (tmp_path / "refs" / "heads").write_text("this repository uses the reftable format\n")
    (tmp_path / "reftable").mkdir()
    tables = tmp_path / "reftable" / "tables.list"
    tables.write_text("0x000000000001-0x000000000001-aaaa.ref\n")
    (tmp_path / "HEAD").write_text("ref: refs/heads/.invalid\n")
    before = advertisement._ref_state(tmp_path)
    assert before is not None and advertisement._ref_state(tmp_path) == before
    replacement = tmp_path / "reftable" / "tables.list.lock"
    replacement.write_text("0x000000000001-0x000000000002-bbbb.ref\n")
    replacement.rename(tables)  # as git replaces it
    assert advertisement._ref_state(tmp_path) != before
