"""The object checks without the live server: the policy table against the installed git, what
git prints and how we explain it, overrides and their audit, the legacy record, the side-band
relay (fuzzed), every object class, the page and the API, and the other ways objects move
(web merges, workspace exports). Pushes over HTTP are in test_object_checks_live.py."""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.test import APIClient

from repos import objectcheck, objectcheck_services, pktline, sideband
from repos.errors import Forbidden, InvalidInput
from repos.models import LegacyObject, ObjectCheckOverride
from tests.factories import RepositoryFactory, UserFactory
from tests.objectclasses import CASES, UNPARSEABLE, UNREACHABLE, build, fsck_ids, uncovered

OID = "a" * 40
OID2 = "b" * 40

# --- the table against the installed git ----------------------------------------------------------


def test_every_known_check_is_accepted_by_the_installed_git_at_its_severity(tmp_path, git_home):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], env=git_home, check=True)
    for direction, command in (("receive", ["receive-pack", "--advertise-refs"]), ("fetch", ["fsck"])):
        args = [arg for key, value in objectcheck.git_config(direction) for arg in ("-c", f"{key}={value}")]
        # git fsck reads fsck.<id>: give it the same severities under that name too
        args += [
            arg
            for check in objectcheck.known_checks()
            for arg in ("-c", f"fsck.{check.msg_id}={check.severity}")
        ]
        result = subprocess.run(
            ["git", *args, *command, str(tmp_path / "r.git")]
            if command[0] != "fsck"
            else ["git", "--git-dir", str(tmp_path / "r.git"), *args, *command],
            env=git_home,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr
        assert "unknown" not in result.stderr.lower() and "demote" not in result.stderr, result.stderr


def test_each_known_check_alone_is_accepted_by_git_fsck(tmp_path, git_home):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], env=git_home, check=True)
    for check in objectcheck.known_checks():
        result = subprocess.run(
            [
                "git",
                "--git-dir",
                str(tmp_path / "r.git"),
                "-c",
                f"fsck.{check.msg_id}={check.severity}",
                "fsck",
            ],
            env=git_home,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, (check.msg_id, result.stderr)


def test_the_table_names_each_id_once_with_a_decision_and_a_reason():
    ids = [check.msg_id for check in objectcheck.CHECKS]
    assert len({i.lower() for i in ids}) == len(ids)
    for check in objectcheck.CHECKS:
        assert re.fullmatch(r"[a-z][A-Za-z0-9]+", check.msg_id)
        assert check.decision in (objectcheck.ACCEPT, objectcheck.REFUSE) and len(check.why) > 20
    assert {check.severity for check in objectcheck.CHECKS} == {"warn", "error"}
    # the examples, decided as it asks
    for msg_id in (
        "zeroPaddedFilemode",
        "badFilemode",
        "missingTaggerEntry",
        "badTimezone",
        "nulInCommit",
        "extraHeaderEntry",
        "missingSpaceBeforeDate",
        "badDateOverflow",
        "missingEmail",
        "badEmail",
    ):
        assert objectcheck.check_for(msg_id).decision == objectcheck.ACCEPT, msg_id
    for msg_id in (
        "gitmodulesName",
        "gitmodulesPath",
        "gitmodulesUrl",
        "gitmodulesSymlink",
        "hasDotgit",
        "hasDotdot",
        "hasDot",
        "duplicateEntries",
        "treeNotSorted",
        "fullPathname",
        "nulInHeader",
        "badObjectSha1",
        "badParentSha1",
        "badTreeSha1",
    ):
        assert objectcheck.check_for(msg_id).decision == objectcheck.REFUSE, msg_id


def test_parse_reads_what_index_pack_and_unpack_objects_print():
    text = (
        f"remote: warning: object {OID}: zeroPaddedFilemode: contains zero-padded file modes\r\n"
        f"error: object {OID2}: nullSha1: contains entries pointing to null sha1\n"
        f"error: object {'c' * 64}: hasDotgit: contains '.git'\n"
        f"error in tree {OID}: hasDot: git fsck's own format is not a transfer's\n"
        "fatal: fsck error in packed object\nerror: object nothex: badDate: x\n"
    )
    assert objectcheck.parse(text) == [
        objectcheck.FsckMessage("warning", OID, "zeroPaddedFilemode", "contains zero-padded file modes"),
        objectcheck.FsckMessage("error", OID2, "nullSha1", "contains entries pointing to null sha1"),
        objectcheck.FsckMessage("error", "c" * 64, "hasDotgit", "contains '.git'"),
    ]
    assert objectcheck.parse_line("") is None and objectcheck.parse_line("error: object") is None


def test_explain_names_the_object_the_rule_and_what_to_do():
    refused = objectcheck.FsckMessage("error", OID, "hasDotgit", "contains '.git'")
    text = objectcheck.explain(refused)
    assert text.startswith(f"object {OID} refused by the hasDotgit check: ")
    assert "git filter-repo" in text and "ask the site's staff to allow hasDotgit" in text
    # an accepted id some repository set to error says so
    lowered = objectcheck.explain(objectcheck.FsckMessage("error", OID, "badTimezone", "bad time zone"))
    assert "this repository's object checks were set to refuse it" in lowered
    unknown = objectcheck.FsckMessage("error", OID, "someNewId", "x")
    assert "git refuses this object" in objectcheck.explain(unknown)


def test_severities_apply_a_repositorys_overrides_and_never_demote_a_fatal_id():
    default = objectcheck.severities()
    assert default["zeroPaddedFilemode"] == "warn" and default["hasDotgit"] == "error"
    assert set(default) == {check.msg_id for check in objectcheck.known_checks()}
    changed = objectcheck.severities(
        {
            "hasdotgit": "warn",
            "badTimezone": "error",
            "noSuchId": "warn",
            "hasDot": "lenient",
            "nulInHeader": "warn",
            "unterminatedHeader": "ignore",
        }
    )
    assert changed["hasDotgit"] == "warn" and changed["badTimezone"] == "error" and "noSuchId" not in changed
    assert changed["hasDot"] == "error"
    assert changed["nulInHeader"] == "error" and changed["unterminatedHeader"] == "error"
    pairs = dict(objectcheck.git_config("fetch", {"hasDotgit": "ignore"}))
    assert pairs["fetch.fsckObjects"] == "true" and pairs["fetch.fsck.hasDotgit"] == "ignore"
    with pytest.raises(ValueError):
        objectcheck.git_config("upload")


@pytest.mark.django_db
def test_overrides_are_staff_only_validated_and_append_only():
    repo = RepositoryFactory()
    staff, admin = UserFactory(is_staff=True), repo.owner
    for actor in (admin, None):
        with pytest.raises(Forbidden):
            objectcheck_services.override_set(
                repo=repo, msg_id="hasDotgit", severity="warn", actor=actor, reason="r"
            )
    bad = [
        ({"msg_id": "x" * 5000}, "msg_id"),
        ({"msg_id": "largePathnameX"}, "msg_id"),
        ({"severity": "lenient"}, "severity"),
        ({"reason": "  "}, "reason"),
        ({"reason": "r" * 2001}, "reason"),
        ({"msg_id": "nulInHeader"}, "severity"),
    ]
    for change, field in bad:
        fields = {"msg_id": "hasDotgit", "severity": "warn", "reason": "ok", **change}
        with pytest.raises(InvalidInput) as info:
            objectcheck_services.override_set(repo=repo, actor=staff, **fields)
        assert field in info.value.fields and len(info.value.message) < 200
    assert not ObjectCheckOverride.objects.exists()
    for msg_id, severity, reason in (("hasdotgit", "warn", "old tree"), ("badTimezone", "error", "strict")):
        objectcheck_services.override_set(
            repo=repo, msg_id=msg_id, severity=severity, actor=staff, reason=reason
        )
    assert objectcheck.repository_overrides(repo) == {"hasDotgit": "warn", "badTimezone": "error"}
    objectcheck_services.override_set(repo=repo, msg_id="hasDotgit", severity="", actor=staff, reason="fixed")
    assert objectcheck.repository_overrides(repo) == {"badTimezone": "error"}
    rows = objectcheck_services.overrides_history(repo)
    history = list(rows.values_list("msg_id", "severity", "actor", "reason"))
    assert history == [
        ("hasDotgit", "", staff.pk, "fixed"),
        ("badTimezone", "error", staff.pk, "strict"),
        ("hasDotgit", "warn", staff.pk, "old tree"),
    ]
    assert objectcheck.repository_overrides(RepositoryFactory()) == {}


@pytest.mark.django_db
def test_record_legacy_records_accepted_objects_that_are_present_once(git_home):
    repo = RepositoryFactory()
    present = (
        subprocess.run(
            ["git", "--git-dir", str(repo.disk_path), "hash-object", "-w", "--stdin"],
            input=b"x\n",
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    messages = [
        objectcheck.FsckMessage("warning", present, "zeroPaddedFilemode", "t"),
        objectcheck.FsckMessage("warning", present, "badFilemode", "t"),
        objectcheck.FsckMessage("warning", OID, "badTimezone", "t"),  # never arrived
        objectcheck.FsckMessage("error", present, "hasDotgit", "t"),
    ]  # refused: not legacy
    assert objectcheck_services.record_legacy(repo, messages, source="push") == 2
    assert objectcheck_services.record_legacy(repo, messages, source="mirror") == 0
    assert set(LegacyObject.objects.values_list("oid", "msg_id", "source")) == {
        (present, "zeroPaddedFilemode", "push"),
        (present, "badFilemode", "push"),
    }
    summary = objectcheck_services.legacy_summary(repo)
    assert summary.total == 1 and summary.by_check == [("badFilemode", 1), ("zeroPaddedFilemode", 1)]
    assert summary.text == (
        "This history contains 1 object in legacy formats: badFilemode (1), zeroPaddedFilemode (1)."
    )
    assert not objectcheck_services.legacy_summary(RepositoryFactory())


# --- every object class ---------------------------------------------------------------------------


def test_every_known_check_is_covered_by_a_case_or_listed_with_a_reason():
    assert uncovered() == []
    known = {check.msg_id for check in objectcheck.known_checks()}
    assert set(CASES) <= known and set(UNREACHABLE) <= known and not set(CASES) & set(UNREACHABLE)
    assert set(UNPARSEABLE) <= set(UNREACHABLE)
    assert all(len(reason) > 20 for reason in UNREACHABLE.values())


@pytest.mark.parametrize("msg_id", sorted(CASES))
def test_each_case_triggers_exactly_its_check(msg_id, tmp_path, git_home):
    built = build(CASES[msg_id], tmp_path / "work", git_home)
    found = fsck_ids(tmp_path / "work", git_home, msg_id, config=CASES[msg_id].server_config)
    assert found == {msg_id: {built.bad_oid}}


# --- the side-band relay --------------------------------------------------------------------------


def pkt(data: bytes) -> bytes:
    return f"{len(data) + 4:04x}".encode() + data


def band2(text: str) -> bytes:
    return pkt(b"\2" + text.encode())


def status(*lines: str) -> bytes:
    inner = b"".join(pkt(line.encode()) for line in lines) + b"0000"
    return pkt(b"\1" + inner) + b"0000"


def relay_all(data: bytes, chunks: list[int] | None = None, **kwargs) -> tuple[bytes, sideband.FsckRelay]:
    relay = sideband.FsckRelay(**kwargs)
    out, pos = [], 0
    for size in chunks or [len(data)]:
        out.append(relay.feed(data[pos : pos + size]))
        pos += size
    out.append(relay.feed(data[pos:]))
    out.append(relay.finish())
    return b"".join(out), relay


def band2_text(body: bytes) -> str:
    text, pos = b"", 0
    while pos + 4 <= len(body):
        length = max(int(body[pos : pos + 4], 16), 4)
        if length > 4 and body[pos + 4] == 2:
            text += body[pos + 5 : pos + length]
        pos += length
    return text.decode()


REFUSED_LINE = f"error: object {OID}: hasDotgit: contains '.git'\n"
WARNED_LINE = f"warning: object {OID2}: zeroPaddedFilemode: contains zero-padded file modes\n"
# receive-pack relays index-pack's stderr in reads of at most 128 bytes: lines span packets.
SPLIT = (
    band2("Resolving deltas: 100% (3/3)\r")
    + band2(WARNED_LINE[:30])
    + band2(WARNED_LINE[30:] + "err")
    + band2(REFUSED_LINE[3:50])
    + band2(REFUSED_LINE[50:] + "fatal: fsck error in packed object\n")
    + status("unpack index-pack abnormal exit", "ng refs/heads/x unpacker error")
)


def test_the_relay_explains_a_refusal_right_under_gits_line():
    out, relay = relay_all(SPLIT)
    explained = "hostsite: " + objectcheck.explain(objectcheck.parse_line(REFUSED_LINE)) + "\n"
    assert band2_text(out) == (
        "Resolving deltas: 100% (3/3)\r"
        + WARNED_LINE
        + REFUSED_LINE
        + explained
        + "fatal: fsck error in packed object\n"
    )
    assert out.endswith(status("unpack index-pack abnormal exit", "ng refs/heads/x unpacker error"))
    assert [(m.level, m.msg_id) for m in relay.messages] == [
        ("warning", "zeroPaddedFilemode"),
        ("error", "hasDotgit"),
    ]


def test_any_chunking_gives_the_same_bytes_and_messages():
    rng = random.Random(12)
    whole, relay = relay_all(SPLIT)
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(SPLIT)), rng.randint(1, 40)))
        sizes = [b - a for a, b in zip([0, *cuts], cuts, strict=False)]
        out, other = relay_all(SPLIT, sizes)
        assert out == whole and other.messages == relay.messages
    # one byte at a time
    assert relay_all(SPLIT, [1] * len(SPLIT))[0] == whole


def test_a_clean_response_and_a_warning_pass_through_byte_for_byte():
    clean = band2("Resolving deltas: 100% (3/3), done.\n") + band2(WARNED_LINE)
    clean += status("unpack ok", "ok refs/x")
    out, relay = relay_all(clean, [7, 3, 100])
    assert out == clean and [m.msg_id for m in relay.messages] == ["zeroPaddedFilemode"]


def test_an_explanation_fits_the_packet_size_and_is_given_once():
    data = band2(REFUSED_LINE) + band2(REFUSED_LINE) + b"0000"
    out, relay = relay_all(data, max_packet=64)
    text = band2_text(out)
    assert text.count("hostsite: ") == 1 and text.count(REFUSED_LINE) == 2 and len(relay.messages) == 1
    added = [p for p in packets(out) if p not in packets(data)]
    assert len(added) > 3 and all(len(p) <= 64 for p in added)


def packets(body: bytes) -> list[bytes]:
    found, pos = [], 0
    while pos < len(body):
        length = max(int(body[pos : pos + 4], 16), 4)
        found.append(body[pos : pos + length])
        pos += length
    return found


def test_garbage_passes_through_unchanged_and_never_raises():
    rng = random.Random(7)
    samples = [
        b"",
        b"zzzz" + band2(REFUSED_LINE),
        b"0003abc",
        b"fff0" + b"x" * 10,
        band2(REFUSED_LINE)[:-3],
        b"00",
        b"\x00\xff" * 50,
        b"0004" + b"0000" + b"0001",
        band2("\xff\xfe not utf-8 \n"),
    ]
    samples += [bytes(rng.randrange(256) for _ in range(rng.randint(0, 300))) for _ in range(300)]
    alphabet = b"0123456789abcdef\1\2\n"  # mostly valid headers and band bytes
    samples += [bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 300))) for _ in range(300)]
    for data in samples:
        for sizes in ([len(data)], [1] * len(data), [rng.randint(1, 9) for _ in range(len(data))]):
            assert relay_all(data, sizes)[0] == data


def test_a_very_long_line_is_bounded_and_not_parsed():
    data = band2("x" * 60000) + band2("x" * 60000) + band2(f" object {OID}: hasDot: y\n")
    out, relay = relay_all(data)
    assert out == data and relay.messages == [] and len(relay._line) == 0


def test_the_capabilities_of_a_push():
    commands = pkt(f"{'0' * 40} {OID} refs/heads/x\0report-status side-band-64k agent=git/2.39\n".encode())
    second = pkt(f"{'0' * 40} {OID2} refs/heads/y\n".encode())
    capabilities = pktline.receive_capabilities(commands + second + b"0000")
    assert capabilities == {"report-status", "side-band-64k", "agent=git/2.39"}
    assert sideband.negotiated(capabilities) and not sideband.negotiated({"side-band", "report-status"})
    assert pktline.receive_capabilities(b"0000") == frozenset()
    assert pktline.receive_capabilities(pkt(f"shallow {OID}\n".encode()) + commands) == capabilities


# --- the page and the API ---------------------------------------------------------------------------


def signed_in(user):
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def bearer(user, scope="write"):
    from repos import services

    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {services.token_create(user=user, scope=scope)[1]}")
    return client


@pytest.fixture
def people(db):
    from repos import services
    from repos.models import Role, Visibility

    owner = UserFactory(username="olga")
    public = RepositoryFactory(owner=owner, name="pub")
    private = RepositoryFactory(owner=owner, name="priv", visibility=Visibility.PRIVATE)
    admin, reader = UserFactory(username="adam"), UserFactory(username="rita")
    for repo in (public, private):
        services.membership_set(repo=repo, user=admin, role=Role.ADMIN)
        services.membership_set(repo=repo, user=reader, role=Role.MAINTAINER)
    return {
        "owner": owner,
        "admin": admin,
        "maintainer": reader,
        "outsider": UserFactory(username="otto"),
        "staff": UserFactory(username="stella", is_staff=True),
        "public": public,
        "private": private,
    }


PAGE = "/olga/{}/settings/object-checks"
API = "/api/v1/repos/olga/{}/object-checks"


@pytest.mark.parametrize("repo", ["pub", "priv"])
def test_only_admins_and_staff_see_the_page_and_the_api(people, repo):
    for who in ("owner", "admin", "staff"):
        assert signed_in(people[who]).get(PAGE.format(repo)).status_code == 200, who
        assert bearer(people[who]).get(API.format(repo)).status_code == 200, who
    for who in ("maintainer", "outsider", None):
        user = people[who] if who else None
        assert signed_in(user).get(PAGE.format(repo)).status_code == 404, who
        assert (
            signed_in(user)
            .post(PAGE.format(repo), {"msg_id": "hasDot", "severity": "warn", "reason": "x"})
            .status_code
            == 404
        ), who
        api = bearer(user)
        assert api.get(API.format(repo)).status_code == 404, who
        response = api.post(
            API.format(repo), {"msg_id": "hasDot", "severity": "warn", "reason": "x"}, format="json"
        )
        if who is None:  # an anonymous write is 401 before any lookup, whether or not the repo exists
            assert response.status_code == 401, who
        else:
            assert response.status_code == 404 and response.json()["error"]["code"] == "not_found", who
    assert not ObjectCheckOverride.objects.exists()


def test_staff_change_a_check_on_the_page_and_admins_read_it(people):
    repo = people["public"]
    LegacyObject.objects.create(repository=repo, oid=OID, msg_id="zeroPaddedFilemode", source="import")
    staff_page = signed_in(people["staff"])
    fields = {"msg_id": "hasDotgit", "severity": "warn", "reason": "<script>alert(1)</script> old tree"}
    response = staff_page.post(PAGE.format("pub"), fields, follow=True)
    assert response.status_code == 200 and "hasDotgit is now warn for olga/pub." in response.content.decode()
    row = ObjectCheckOverride.objects.get()
    assert (row.repository, row.msg_id, row.severity) == (repo, "hasDotgit", "warn")
    assert row.actor == people["staff"]
    page = signed_in(people["owner"]).get(PAGE.format("pub")).content.decode()
    assert "This history contains 1 object in legacy formats: zeroPaddedFilemode (1)." in page and OID in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; old tree" in page and "<script>alert(1)" not in page
    assert "Only the site's staff can change" in page and 'name="reason"' not in page
    assert "(overridden; default error)" in page
    assert 'name="reason"' in staff_page.get(PAGE.format("pub")).content.decode()
    # an admin who is not staff cannot, hostile input changes nothing
    owner_page = signed_in(people["owner"])
    for fields in ({"msg_id": "hasDot", "severity": "ignore", "reason": "mine"},):
        response = owner_page.post(PAGE.format("pub"), fields, follow=True)
        assert "Only site staff may change" in response.content.decode()
    for fields in (
        {"msg_id": "x" * 10000, "severity": "warn", "reason": "r"},
        {"msg_id": "hasDot", "severity": "off", "reason": "r"},
        {"msg_id": "hasDot"},
        {"msg_id": "nulInHeader", "severity": "warn", "reason": "r"},
    ):
        assert staff_page.post(PAGE.format("pub"), fields).status_code == 302
    assert ObjectCheckOverride.objects.count() == 1


def test_the_api_reads_for_admins_and_writes_for_staff(people):
    repo = people["private"]
    LegacyObject.objects.create(repository=repo, oid=OID, msg_id="badTimezone", source="push")
    LegacyObject.objects.create(repository=repo, oid=OID, msg_id="badEmail", source="push")
    body = bearer(people["admin"]).get(API.format("priv")).json()
    assert {row["msg_id"] for row in body["checks"]} == {c.msg_id for c in objectcheck.known_checks()}
    assert body["legacy"]["total"] == 1
    assert body["legacy"]["text"].startswith("This history contains 1 object")
    assert body["legacy"]["by_check"] == [
        {"msg_id": "badEmail", "count": 1, "examples": [OID]},
        {"msg_id": "badTimezone", "count": 1, "examples": [OID]},
    ]
    assert body["overrides"] == []
    payload = {"msg_id": "badTimezone", "severity": "error", "reason": "we fixed our importer"}
    for who in ("owner", "admin"):
        response = bearer(people[who]).post(API.format("priv"), payload, format="json")
        assert response.status_code == 403 and response.json()["error"]["code"] == "permission_denied", who
    read_only = bearer(people["staff"], scope="read")
    assert read_only.post(API.format("priv"), payload, format="json").status_code == 403
    for bad in (
        {**payload, "severity": "lenient"},
        {**payload, "msg_id": "noSuchCheck"},
        {"msg_id": "badTimezone"},
        {**payload, "reason": "r" * 2001},
        {**payload, "msg_id": ["a"]},
        {**payload, "msg_id": "nulInHeader", "severity": "ignore"},
    ):
        response = bearer(people["staff"]).post(API.format("priv"), bad, format="json")
        assert response.status_code == 400 and response.json()["error"]["code"] == "invalid", bad
    assert not ObjectCheckOverride.objects.exists()
    response = bearer(people["staff"]).post(API.format("priv"), payload, format="json")
    assert response.status_code == 201 and response.json()["actor"] == "stella"
    body = bearer(people["owner"]).get(API.format("priv")).json()
    assert next(c for c in body["checks"] if c["msg_id"] == "badTimezone")["severity"] == "error"
    assert [(o["msg_id"], o["severity"], o["actor"]) for o in body["overrides"]] == [
        ("badTimezone", "error", "stella")
    ]


def test_the_repository_page_tells_admins_what_the_history_carries(people):
    LegacyObject.objects.create(
        repository=people["public"], oid=OID, msg_id="missingTaggerEntry", source="import"
    )
    line = "This history contains 1 object in legacy formats: missingTaggerEntry (1)."
    page = signed_in(people["admin"]).get("/olga/pub").content.decode()
    assert line in page and PAGE.format("pub") in page
    for who in ("maintainer", "outsider"):
        assert line not in signed_in(people[who]).get("/olga/pub").content.decode()
    assert line not in signed_in(None).get("/olga/pub").content.decode()


# --- the same policy where objects move without a push --------------------------------------------

LEGACY_AUTHOR = b"author Old Tool <old@example.invalid> 1112911993 -07"  # badTimezone, from a 2005 tool
SECOND_AUTHOR = b"author Second Author <second@example.invalid> 1112911993 -0700"  # multipleAuthors


class LegacyScene:
    """A repository whose main has one commit, and alice's workspace ref two more: a commit in
    legacy formats (two author lines, the first with a bad time zone; a zero-padded tree mode),
    then an ordinary one.
    They reach the bare repository by a fetch under the object checks, as an import would."""

    def __init__(self, tmp_path, env, *, main_moves: bool):
        from repos import services
        from repos.models import Role
        from tests.objectclasses import Maker

        self.env = env
        self.owner, self.alice = UserFactory(username="olga"), UserFactory(username="alice")
        self.maint = UserFactory(username="max", email="max@example.invalid")
        self.repo = RepositoryFactory(owner=self.owner, name="legacy")
        services.membership_set(repo=self.repo, user=self.maint, role=Role.MAINTAINER)
        work = self.work = tmp_path / "work"
        self.git("init", "-q", "-b", "main", str(work), here=False)
        (work / "a.txt").write_text("one\n")
        self.git("add", "a.txt")
        self.git("commit", "-q", "-m", "base")
        m = Maker(work, env)
        tree = m.tree(
            ("100644", "a.txt", self.git("rev-parse", "main:a.txt")),
            ("040000", "sub", m.tree(("100644", "x.txt", m.blob(b"x\n")))),
        )
        authors = LEGACY_AUTHOR + b"\n" + SECOND_AUTHOR
        self.legacy = m.commit(tree, [self.git("rev-parse", "main")], author=authors, message=b"old\n")
        self.legacy_tree = tree
        self.git("checkout", "-q", "-b", "feature", self.legacy)
        (work / "b.txt").write_text("bee\n")
        self.git("add", "b.txt")
        self.git("commit", "-q", "-m", "new work")
        self.git("checkout", "-q", "main")
        if main_moves:
            (work / "c.txt").write_text("sea\n")
            self.git("add", "c.txt")
            self.git("commit", "-q", "-m", "main moves")
        config = [arg for key, value in objectcheck.git_config("fetch") for arg in ("-c", f"{key}={value}")]
        self.bare(
            *config,
            "fetch",
            "-q",
            str(work),
            "+refs/heads/main:refs/heads/main",
            "+refs/heads/feature:refs/users/alice/feature",
        )

    def git(self, *args, here: bool = True) -> str:
        where = ["-C", str(self.work)] if here else []
        return subprocess.run(
            ["git", *where, *args],
            env={
                **self.env,
                "GIT_AUTHOR_DATE": "@1700000000 +0000",
                "GIT_COMMITTER_DATE": "@1700000000 +0000",
            },
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    def bare(self, *args) -> str:
        return self.git("--git-dir", str(self.repo.disk_path), *args, here=False)


@pytest.mark.django_db
@pytest.mark.parametrize("strategy", ["merge", "ff", "rebase", "squash"])
def test_a_web_merge_of_legacy_history_works(strategy, tmp_path, git_home, monkeypatch):
    from celery.app.task import Task

    from reviews import merge, services
    from reviews.models import ProposalState

    monkeypatch.setattr(Task, "apply_async", lambda *a, **k: None)  # no broker messages from on_commit
    scene = LegacyScene(tmp_path, git_home, main_moves=strategy != "ff")
    proposal = services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        target_branch="main",
        description="",
        source_ref="refs/users/alice/feature",
        title="Old history",
    )
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy=strategy)
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.MERGED and scene.bare("rev-parse", "main") == result.sha
    # the merged tree has every file; the legacy commit is in main's history, or its replay is
    files = scene.bare("ls-tree", "-r", "--name-only", result.sha).split()
    assert {"a.txt", "b.txt", "sub/x.txt"} <= set(files)
    if strategy in ("merge", "ff"):
        assert scene.bare("merge-base", "--is-ancestor", scene.legacy, "main") == ""
    if strategy == "rebase":
        replayed = scene.bare("rev-parse", "main~1")
        headers = scene.bare("cat-file", "commit", replayed).encode().split(b"\n\n")[0].split(b"\n")
        # the (first) author line kept byte for byte, the merging user as committer
        assert headers[2] == LEGACY_AUTHOR and headers[3].startswith(b"committer max <max@example.invalid> ")
        assert [h.split(b" ")[0] for h in headers] == [b"tree", b"parent", b"author", b"committer"]
    # what the merge wrote is as clean as git makes it: only the brought-in objects are legacy
    found = fsck_ids(scene.repo.disk_path, git_home, "zeroPaddedFilemode", bare=True)
    assert set(found) <= {"zeroPaddedFilemode", "badTimezone", "multipleAuthors"}
    assert found.get("zeroPaddedFilemode") == {scene.legacy_tree}


@pytest.mark.django_db
def test_a_workspace_export_of_legacy_history_builds_and_verifies(tmp_path, git_home):
    from django.utils import timezone

    from repos.models import Repository
    from workspaces import exports
    from workspaces.models import WorkspaceExport

    scene = LegacyScene(tmp_path, git_home, main_moves=True)
    Repository.objects.filter(pk=scene.repo.pk).update(deleted_at=timezone.now())
    export = exports.workspace_export_build(
        export=WorkspaceExport.objects.create(repository=scene.repo, user=scene.alice)
    )
    assert export.state == WorkspaceExport.State.READY, export.error
    bundle = exports.export_file(export)
    client = tmp_path / "client"
    scene.git("init", "-q", str(client), here=False)
    scene.git("-C", str(client), "bundle", "verify", str(bundle), here=False)
    # a client applying it under the same object checks gets the legacy history whole
    config = [arg for key, value in objectcheck.git_config("fetch") for arg in ("-c", f"{key}={value}")]
    at = ["-C", str(client)]
    scene.git(*at, *config, "fetch", "-q", str(bundle), "refs/users/alice/*:refs/remotes/alice/*", here=False)
    tip = scene.git(*at, "rev-parse", "refs/remotes/alice/feature", here=False)
    assert tip == scene.bare("rev-parse", "refs/users/alice/feature")
    assert scene.git(*at, "rev-parse", "refs/remotes/alice/feature~1", here=False) == scene.legacy


# --- the documentation --------------------------------------------------------------------------------


def test_the_documented_table_is_the_code_table():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "object-checks.md").read_text()
    rows = re.findall(r"^\| `([A-Za-z0-9]+)` \| (accept|refuse) \|", doc, re.M)
    assert len(rows) == len(set(rows))
    assert dict(rows) == {check.msg_id: check.decision for check in objectcheck.CHECKS}
