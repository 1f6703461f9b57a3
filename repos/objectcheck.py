"""The object checks: what git's fsck may find in objects that arrive, and what we do about it.

Every way objects arrive (push, import, mirror fetch) runs git's fsck with each message id's
severity set explicitly, never strict mode's blanket "every warning is fatal", which refused
real histories that GitHub, GitLab and Gitea host (zero-padded modes from 2005-era tools, tags
without a tagger). Two decisions:

- ACCEPT: legacy formatting that old tools wrote and that harms no client. git reports it as a
  warning; the object gets in and is recorded (LegacyObject), so admins see what their history
  carries.
- REFUSE: anything that can hurt a client or the server: paths that escape a checkout or write
  into `.git`, hostile `.gitmodules`/`.gitattributes`, trees git cannot read reliably, objects
  that do not parse. The whole push (import, sync) is refused and the `remote:` line says which
  object, which rule, and what to do.

Gitaly and Forgejo relax exactly three ids (badTimezone, missingSpaceBeforeDate,
zeroPaddedFilemode, to "ignore"); we accept more, and record instead of ignoring. Ids that check
refs (badRefName, ...) never fire on a transfer and are not listed. Staff may override one id for
one repository (ObjectCheckOverride, audited); nobody else can weaken the checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitcore.git import git_version
from repos.models import ObjectCheckOverride

ACCEPT = "accept"
REFUSE = "refuse"
# What each decision becomes in git's configuration.
SEVERITY = {ACCEPT: "warn", REFUSE: "error"}
SEVERITIES = ("error", "warn", "ignore")
# Never in a git release we run (2.45.1 added them with symlinkPointsToGitDir, 2.45.2 reverted
# them): documented, never configured.
UNRELEASED = (99, 0, 0)

_IDENT = "legacy author/committer formatting from old tools; git log shows it as written"
_TAG = "legacy tag formatting from old tools; the tag still points where it says"
_PATH = (
    "a checkout would write outside the working tree or into .git "
    "(CVE-2014-9390, CVE-2019-1353 class); remove the path from every commit that has it "
    "(git filter-repo --path <path> --invert-paths) and push the rewritten history"
)
_MODULES = (
    "a hostile .gitmodules can make `git clone --recurse-submodules` run commands "
    "(CVE-2018-11235, CVE-2018-17456); fix or drop the .gitmodules entry in every commit "
    "that has it (git filter-repo) and push again"
)
_ATTRS = (
    "a hostile .gitattributes can overflow git's attribute parser (CVE-2022-23521); fix or "
    "drop it in every commit that has it (git filter-repo) and push again"
)
_BROKEN = (
    "the object cannot be parsed reliably (a broken tool or corruption); rewrite the history "
    "that contains it (git fast-export | git fast-import into a new repository) and push again"
)
_TREE = (
    "git and other clients read such a tree inconsistently; rewrite the commits that contain it "
    "(git filter-repo) and push again"
)


@dataclass(frozen=True)
class Check:
    msg_id: str  # git's camelCase name
    decision: str  # ACCEPT or REFUSE
    since: tuple[int, int, int]  # the first git release that knows the id
    why: str  # why this decision; for a refusal, also what to do

    @property
    def severity(self) -> str:
        return SEVERITY[self.decision]


def _a(msg_id: str, why: str, since=(2, 0, 0)) -> Check:
    return Check(msg_id, ACCEPT, since, why)


def _r(msg_id: str, why: str, since=(2, 0, 0)) -> Check:
    return Check(msg_id, REFUSE, since, why)


# Every object check in git's fsck-msgids (2.39 through 2.50, plus the unreleased symlink ones).
CHECKS: tuple[Check, ...] = (
    # Accepted: legacy formatting.
    _a("badDate", _IDENT),
    _a("badDateOverflow", _IDENT),
    _a("badEmail", _IDENT),
    _a("badName", _IDENT),
    _a("badTimezone", _IDENT + " (an old git bug wrote invalid time zones)"),
    _a("missingEmail", _IDENT),
    _a("missingNameBeforeEmail", _IDENT),
    _a("missingSpaceBeforeDate", _IDENT),
    _a("missingSpaceBeforeEmail", _IDENT),
    _a("zeroPaddedDate", _IDENT),
    _a("multipleAuthors", _IDENT + "; clients use the first author line"),
    _a("nulInCommit", "a NUL byte in a commit message body (old conversion tools); headers are intact"),
    _a("zeroPaddedFilemode", "tree modes written as 040000 by git before 1.5 and other early tools"),
    _a("badFilemode", "tree modes such as 100664 from early git; clients treat them as regular files"),
    _a(
        "nullSha1",
        "a tree entry (usually a submodule) naming the null id, from old tools; the "
        "connectivity check still refuses any object that is really missing",
    ),
    _a("missingTaggerEntry", _TAG + " (git's own early tags have no tagger)"),
    _a("badTagName", _TAG),
    _a("extraHeaderEntry", _TAG),
    _a(
        "gitmodulesParse",
        ".gitmodules that git cannot parse is ignored by clients; the security "
        "checks refuse any .gitmodules that parses to something dangerous",
    ),
    _a(
        "gitignoreSymlink",
        "clients never follow a symlinked .gitignore (git 2.32+), and what it "
        "would read only decides which files are ignored",
        since=(2, 32, 0),
    ),
    _a(
        "mailmapSymlink",
        "clients never follow a symlinked .mailmap (git 2.32+); it only maps names",
        since=(2, 32, 0),
    ),
    # Refused: paths that hurt a checkout.
    _r("hasDot", _PATH),
    _r("hasDotdot", _PATH),
    _r("hasDotgit", _PATH),
    _r("fullPathname", _PATH),
    _r("emptyName", _PATH),
    _r("largePathname", "a path longer than 4096 bytes exhausts clients; " + _TREE, since=(2, 43, 0)),
    _r("symlinkPointsToGitDir", _PATH, since=UNRELEASED),
    _r("symlinkTargetBlob", _PATH, since=UNRELEASED),
    _r("symlinkTargetLength", _PATH, since=UNRELEASED),
    _r("symlinkTargetMissing", _PATH, since=UNRELEASED),
    # Refused: hostile .gitmodules and .gitattributes.
    _r("gitmodulesBlob", _MODULES),
    _r("gitmodulesLarge", _MODULES),
    _r("gitmodulesMissing", _MODULES),
    _r("gitmodulesName", _MODULES),
    _r("gitmodulesPath", _MODULES),
    _r("gitmodulesSymlink", _MODULES),
    _r("gitmodulesUpdate", _MODULES),
    _r("gitmodulesUrl", _MODULES),
    # 2.39.1 (and the 2.30.7+ maintenance releases) added these: an older git knows none of them.
    _r("gitattributesBlob", _ATTRS, since=(2, 39, 1)),
    _r("gitattributesLarge", _ATTRS, since=(2, 39, 1)),
    _r("gitattributesLineLength", _ATTRS, since=(2, 39, 1)),
    _r("gitattributesMissing", _ATTRS, since=(2, 39, 1)),
    _r(
        "gitattributesSymlink",
        "a symlinked .gitattributes was followed out of the checkout by git before 2.32; " + _ATTRS,
        since=(2, 32, 0),
    ),
    # Refused: trees clients read inconsistently.
    _r("duplicateEntries", _TREE),
    _r("treeNotSorted", _TREE),
    # Refused: objects that do not parse.
    _r("badObjectSha1", _BROKEN),
    _r("badParentSha1", _BROKEN),
    _r("badTreeSha1", _BROKEN),
    _r("badTree", _BROKEN),
    _r("badType", _BROKEN),
    _r("unknownType", _BROKEN),
    _r("missingTree", _BROKEN),
    _r("missingAuthor", "libgit2 and JGit cannot read a commit without an author; " + _BROKEN),
    _r("missingCommitter", "libgit2 and JGit cannot read a commit without a committer; " + _BROKEN),
    _r("missingObject", _BROKEN),
    _r("missingType", _BROKEN),
    _r("missingTypeEntry", _BROKEN),
    _r("missingTag", _BROKEN),
    _r("missingTagEntry", _BROKEN),
    _r("nulInHeader", _BROKEN),
    _r("unterminatedHeader", _BROKEN),
    _r("badGpgsig", _BROKEN, since=(2, 51, 0)),
    _r("badHeaderContinuation", _BROKEN, since=(2, 51, 0)),
)

BY_ID: dict[str, Check] = {check.msg_id.lower(): check for check in CHECKS}
# git refuses to lower these below "error" ("Cannot demote"), so no override may.
FATAL = frozenset({"nulinheader", "unterminatedheader"})


def check_for(msg_id: str) -> Check | None:
    return BY_ID.get((msg_id or "").lower())


def known_checks() -> list[Check]:
    """The checks the installed git knows. receive-pack and fetch-pack skip an unknown id with a
    warning, but `git fsck` dies on one, so only these are ever configured."""
    version = git_version()
    return [check for check in CHECKS if check.since <= version]


def severities(overrides: dict[str, str] | None = None) -> dict[str, str]:
    """msg_id -> severity in force: the table, then a repository's overrides."""
    result = {check.msg_id: check.severity for check in known_checks()}
    for msg_id, severity in (overrides or {}).items():
        check = check_for(msg_id)
        if check is None or check.msg_id not in result or severity not in SEVERITIES:
            continue
        # git dies on a demoted fatal id ("Cannot demote"): every push would fail.
        if check.msg_id.lower() in FATAL and severity != "error":
            continue
        result[check.msg_id] = severity
    return result


def git_config(direction: str, overrides: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """`-c` pairs for receive-pack ("receive") or fetch ("fetch"): fsck on, every id explicit."""
    if direction not in ("receive", "fetch"):
        raise ValueError(direction)
    pairs = [(f"{direction}.fsckObjects", "true")]
    pairs += [(f"{direction}.fsck.{msg_id}", severity) for msg_id, severity in severities(overrides).items()]
    return pairs


def repository_overrides(repo) -> dict[str, str]:
    """The overrides in force for a repository: the newest row per id ("" is the default)."""
    latest: dict[str, str] = {}
    for msg_id, severity in (
        ObjectCheckOverride.objects.filter(repository=repo).order_by("id").values_list("msg_id", "severity")
    ):
        latest[msg_id] = severity
    return {msg_id: severity for msg_id, severity in latest.items() if severity}


# --- what git printed --------------------------------------------------------------------------

# index-pack and unpack-objects: "warning: object <oid>: zeroPaddedFilemode: contains zero-padded
# file modes"; "error: ..." for a refusal, then "fatal: fsck error in packed object".
# Ids may hold digits (nullSha1, badTreeSha1).
_MESSAGE = re.compile(r"(warning|error): object ([0-9a-f]{40}|[0-9a-f]{64}): ([A-Za-z][A-Za-z0-9]*): (.*)")


@dataclass(frozen=True)
class FsckMessage:
    level: str  # "warning" or "error"
    oid: str
    msg_id: str
    text: str

    @property
    def check(self) -> Check | None:
        return check_for(self.msg_id)

    @property
    def refused(self) -> bool:
        return self.level == "error"


def parse_line(line: str) -> FsckMessage | None:
    match = _MESSAGE.search(line.strip())
    if not match:
        return None
    return FsckMessage(match[1], match[2], match[3], match[4].strip())


def parse(text: str) -> list[FsckMessage]:
    messages = []
    for line in text.replace("\r", "\n").splitlines():
        message = parse_line(line)
        if message is not None:
            messages.append(message)
    return messages


def explain(message: FsckMessage) -> str:
    """The line a refused object gets, after git's own: the rule and what to do."""
    check = message.check
    if check is None:
        why = "git refuses this object"
    elif check.decision == ACCEPT:
        why = f"this repository's object checks were set to refuse it ({check.why})"
    else:
        why = check.why
    return (
        f"object {message.oid} refused by the {message.msg_id} check: {why}. If this history must "
        f"be hosted as it is, ask the site's staff to allow {message.msg_id} for this repository."
    )
