"""The object checks without the live server: the policy table against the installed git, what
git prints and how we explain it, overrides and their audit, the legacy record, every object
class. The side-band relay is in test_object_checks_relay.py, the page and the API in
test_object_checks_pages.py, the other ways objects move (web merges, workspace exports) in
test_object_checks_legacy.py, pushes over HTTP in test_object_checks_live.py."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from repos import objectcheck, objectcheck_services
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


# --- the documentation --------------------------------------------------------------------------------


def test_the_documented_table_is_the_code_table():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "object-checks.md").read_text()
    rows = re.findall(r"^\| `([A-Za-z0-9]+)` \| (accept|refuse) \|", doc, re.M)
    assert len(rows) == len(set(rows))
    assert dict(rows) == {check.msg_id: check.decision for check in objectcheck.CHECKS}
