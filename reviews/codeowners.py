"""CODEOWNERS: who owns which files of a branch, in GitHub's syntax.

The file is read from the target branch (never from the proposal: a contributor could name
themselves owner). The first of LOCATIONS that exists is used, GitHub's order with ours first.
Each line is `<pattern> <owner>...`: gitignore-style patterns, the last matching line wins, and
a line with no owners leaves its files unowned. Owners are `@username` or an email address
(matched against accounts' email and commit email). What GitHub would also refuse or we do not
support (`!` negation, `[...]` ranges, `\\` escapes, `@org/team`, unknown users) is reported as
a Problem with its line number and skipped; nothing here raises on a bad file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from django.contrib.auth import get_user_model
from django.db.models import Q
from django.db.models.functions import Lower

from gitcore import catfile
from gitcore.git import run_git
from repos import browse
from repos.models import Role
from repos.selectors import role_for

LOCATIONS = (".hostsite/CODEOWNERS", ".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
MAX_BYTES = 3 * 1024 * 1024  # GitHub ignores larger files; so do we
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_USERNAME = re.compile(r"^@([A-Za-z0-9](?:[A-Za-z0-9_.-]{0,38}))$")


@dataclass(frozen=True)
class Problem:
    line: int
    message: str


@dataclass(frozen=True)
class Rule:
    line: int
    pattern: str
    matcher: Pattern
    owners: tuple[str, ...]  # usernames


@dataclass
class CodeOwners:
    path: str = ""  # where the file was found; empty: no CODEOWNERS
    rules: list[Rule] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def owners_of(self, filename: str) -> tuple[str, ...]:
        """The usernames owning `filename`: the last matching rule's (maybe none)."""
        for rule in reversed(self.rules):
            if rule.matcher.match(filename):
                return rule.owners
        return ()


class BadPattern(ValueError):
    pass


_DOUBLE = "**"
MAX_OWNERS = 500  # distinct owner names looked up per file (one query, bounded parameters)
MAX_PATTERN = 1000  # characters; GitHub's own limit is larger, but no real pattern comes close


def glob_segment(pattern: str, name: str) -> bool:
    """fnmatch for one path segment (`*`, `?`, the rest literal), without regexes: the greedy
    two-pointer match, O(len(pattern) x len(name)) at worst, so no pattern in a repository's
    file can make a page backtrack for seconds."""
    p = n = 0
    star, mark = -1, 0
    while n < len(name):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == name[n]):
            p, n = p + 1, n + 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark, p = p, n, p + 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            n = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


@dataclass(frozen=True)
class Pattern:
    """A compiled pattern: path segments (`**` spans any number of directories), and what may
    follow the last one: `exact` (nothing), `below` (nothing or a directory's contents), `inside`
    (a directory's contents only)."""

    segments: tuple[str, ...]
    tail: str

    def match(self, path: str) -> bool:
        parts = path.split("/")
        memo: dict[tuple[int, int], bool] = {}

        def at(i: int, j: int) -> bool:
            if (i, j) in memo:
                return memo[i, j]
            if i == len(self.segments):
                found = j == len(parts) or (self.tail == "below" and j < len(parts))
                if self.tail == "inside":
                    found = j < len(parts)
            elif self.segments[i] == _DOUBLE:
                found = any(at(i + 1, k) for k in range(j, len(parts) + 1))
            else:
                found = j < len(parts) and glob_segment(self.segments[i], parts[j]) and at(i + 1, j + 1)
            memo[i, j] = found
            return found

        return at(0, 0)


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Pattern:
    """A gitignore-style pattern over repository paths (no leading slash).

    Anchored to the root when it starts with `/` or has a `/` before its end; otherwise it
    matches at any depth. A trailing `/` matches only a directory's contents. A pattern whose
    last part has a wildcard matches one level (`docs/*` not `docs/a/b`, as GitHub documents);
    one without also matches everything under it when it names a directory."""
    if len(pattern) > MAX_PATTERN:
        raise BadPattern(f"longer than {MAX_PATTERN} characters")
    if pattern.startswith("!"):
        raise BadPattern("negation (!) is not supported in CODEOWNERS")
    if "[" in pattern or "]" in pattern:
        raise BadPattern("character ranges ([...]) are not supported in CODEOWNERS")
    if "\\" in pattern:
        raise BadPattern("escapes (\\) are not supported in CODEOWNERS")
    directory = pattern.endswith("/")
    body = pattern.strip("/")
    if not body:
        if pattern.startswith("/"):
            raise BadPattern("a pattern of only slashes matches nothing")
        raise BadPattern("empty pattern")
    parts = body.split("/")
    if any(part == "" for part in parts):
        raise BadPattern("empty path segment (//)")
    if any(_DOUBLE in part and part != _DOUBLE for part in parts):
        raise BadPattern("** must be a whole path segment")
    anchored = pattern.startswith("/") or "/" in body
    segments = tuple(parts if anchored else [_DOUBLE, *parts])
    last = parts[-1]
    if last == _DOUBLE:
        # `logs/**`: everything inside logs/, not logs itself
        return Pattern(segments[:-1], "inside")
    if directory:
        return Pattern(segments, "inside")
    return Pattern(segments, "exact" if ("*" in last or "?" in last) else "below")


def _resolve(tokens: list[str], line: int, problems: list[Problem], users: dict[str, str]) -> list[str]:
    owners: list[str] = []
    for token in tokens:
        if token.startswith("#"):
            break  # a trailing comment
        match = _USERNAME.match(token)
        if "/" in token and token.startswith("@"):
            problems.append(Problem(line, f"{token}: teams are not supported; name users"))
        elif match:
            name = users.get(match.group(1).lower())
            if name is None:
                problems.append(Problem(line, f"{token}: no such user"))
            elif name not in owners:
                owners.append(name)
        elif _EMAIL.match(token):
            name = users.get(token.lower())
            if name is None:
                problems.append(Problem(line, f"{token}: no user has this email address"))
            elif name not in owners:
                owners.append(name)
        else:
            problems.append(Problem(line, f"{token[:80]}: not an owner (@user or an email address)"))
    return owners


def _users_named(tokens: set[str]) -> dict[str, str]:
    """lower-case username or email -> username, for active accounts among `tokens`."""
    names = {t[1:].lower() for t in tokens if t.startswith("@") and "/" not in t}
    emails = {t.lower() for t in tokens if not t.startswith("@") and "@" in t}
    if not names and not emails:
        return {}
    found: dict[str, str] = {}
    rows = (
        get_user_model()
        .objects.filter(is_active=True)
        .annotate(lname=Lower("username"), lemail=Lower("email"), lcommit=Lower("commit_email"))
        .filter(Q(lname__in=names) | Q(lemail__in=emails) | Q(lcommit__in=emails))
        .order_by("pk")
        .values_list("username", "lemail", "lcommit")
    )
    for username, email, commit_email in rows:
        if username.lower() in names:
            found[username.lower()] = username
        for address in (email, commit_email):
            if address and address in emails:
                found.setdefault(address, username)
    return found


def parse(text: str, *, path: str = "CODEOWNERS") -> CodeOwners:
    result = CodeOwners(path=path)
    rows: list[tuple[int, str, list[str]]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern, *tokens = line.split()
        rows.append((number, pattern, tokens))
    distinct = sorted({t for _n, _p, tokens in rows for t in tokens})
    if len(distinct) > MAX_OWNERS:
        result.problems.append(
            Problem(0, f"more than {MAX_OWNERS} distinct owners; only the first {MAX_OWNERS} are looked up")
        )
    users = _users_named(set(distinct[:MAX_OWNERS]))
    for number, pattern, tokens in rows:
        try:
            matcher = compile_pattern(pattern)
        except BadPattern as exc:
            result.problems.append(Problem(number, f"{pattern[:80]}: {exc}"))
            continue
        owners = _resolve(tokens, number, result.problems, users)
        result.rules.append(Rule(number, pattern, matcher, tuple(owners)))
    return result


def read(repo_path, commit: str) -> CodeOwners:
    """The CODEOWNERS of `commit` (a branch tip), or an empty one. A file too large or not
    UTF-8 is reported, not read."""
    # Through the repository's cat-file (gitcore.catfile): the branch pages ask this every time.
    for location in LOCATIONS:
        found = catfile.info(repo_path, f"{commit}:{location}")
        if found is None:
            continue
        if found.type != "blob":
            return CodeOwners(location, problems=[Problem(0, f"{location} is not a file")])
        if found.size > MAX_BYTES:
            return CodeOwners(location, problems=[Problem(0, f"{location} is larger than 3 MiB; ignored")])
        data = browse.read_blob(repo_path, found.oid)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return CodeOwners(location, problems=[Problem(0, f"{location} is not UTF-8 text; ignored")])
        return parse(text, path=location)
    return CodeOwners()


def changed_files(repo_path, base: str, head: str) -> list[str]:
    """Paths the revision changes (both sides of a rename)."""
    out = run_git(["diff", "--name-only", "-z", "--no-renames", base, head, "--"], repo=repo_path).stdout
    return [p for p in out.decode("utf-8", "replace").split("\0") if p]


def owners_by_file(owners: CodeOwners, files: list[str]) -> dict[str, tuple[str, ...]]:
    """file -> its owners, for files that have any."""
    return {f: o for f in files if (o := owners.owners_of(f))}


def approval_problems(repo, owners: CodeOwners) -> list[Problem]:
    """Owners who could not give a code owner's approval (only maintainers may approve)."""
    users = {
        u.username: u
        for u in get_user_model().objects.filter(username__in={n for r in owners.rules for n in r.owners})
    }
    problems = []
    for rule in owners.rules:
        for name in rule.owners:
            role = role_for(users.get(name), repo)
            if role is None or role < Role.MAINTAINER:
                problems.append(Problem(rule.line, f"@{name} is not a maintainer, so cannot approve"))
    return problems
