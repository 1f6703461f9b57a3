"""Validation of user and repository names.

Both reach URLs (`/<owner>/<name>`) and user names reach ref names (`refs/users/<name>/`), so
the rules are strict ASCII: no look-alike unicode, no dots that walk paths, nothing git's
check-ref-format would refuse. Names never reach the filesystem (repositories live at
`<shard>/<id>.git`), but a second line of defence costs nothing.
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError

from repos.hooks import refspace

# First path segments the site itself uses, plus names that would confuse people or tools.
RESERVED_NAMES = frozenset(
    {
        "-",
        "about",
        "account",
        "accounts",
        "admin",
        "api",
        "assets",
        "bundles",
        "dashboard",
        "explore",
        "favicon.ico",
        "git",
        "health",
        "help",
        "healthz",
        "hooks",
        "imports",
        "info",
        "login",
        "logout",
        "media",
        "mirror",
        "moderation",
        "new",
        "notifications",
        "objects",
        "org",
        "orgs",
        "raw",
        "refs",
        "repos",
        "robots.txt",
        "root",
        "search",
        "settings",
        "signup",
        "site",
        "static",
        "staff",
        "status",
        "status.json",
        "system",
        "user",
        "users",
        "www",
        ".well-known",
        "head",
        "none",
        "null",
    }
)

# Where `repo create --import --refs all` keeps the source's other namespaces (refs/pull/...):
# never advertised, never pushable; admins remove them on the web or through the API.
IMPORTED_REFS = refspace.IMPORTED

USERNAME_MAX = 39
REPO_NAME_MAX = 100

_USERNAME_RE = re.compile(r"[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,38}", re.ASCII)
_REPO_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*", re.ASCII)


def validate_username(value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValidationError("A username is required.", code="required")
    if len(value) > USERNAME_MAX:
        raise ValidationError(f"Usernames are at most {USERNAME_MAX} characters.", code="too_long")
    if not _USERNAME_RE.fullmatch(value):
        raise ValidationError(
            "Usernames use lowercase letters, digits and single hyphens, and start and end with a "
            "letter or digit.",
            code="invalid",
        )
    if value in RESERVED_NAMES:
        raise ValidationError(f"'{value}' is reserved.", code="reserved")


def validate_repo_name(value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValidationError("A repository name is required.", code="required")
    if len(value) > REPO_NAME_MAX:
        raise ValidationError(f"Repository names are at most {REPO_NAME_MAX} characters.", code="too_long")
    if not _REPO_NAME_RE.fullmatch(value):
        raise ValidationError(
            "Repository names use ASCII letters, digits, '.', '-' and '_', and do not start with '.' or '-'.",
            code="invalid",
        )
    lowered = value.lower()
    if lowered.endswith(".git") or ".." in value or lowered.endswith(".lock"):
        raise ValidationError(
            "Repository names may not contain '..' or end in '.git' or '.lock'.", code="invalid"
        )
    if lowered in RESERVED_NAMES or lowered.split(".")[0] in {"con", "nul", "aux", "prn"}:
        raise ValidationError(f"'{value}' is reserved.", code="reserved")


# Characters git strips from the ends of an identity's name ("crud"), and what no ident line
# may hold: <> delimit the e-mail, a newline would end the header.
_IDENT_CRUD = ".,:;<>\"\\' \t"
COMMIT_NAME_MAX = 100


def _has_control(value: str) -> bool:
    return any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value)


def validate_commit_name(value: str) -> None:
    """A name for the author and committer lines of commits made on the web."""
    if _has_control(value) or "<" in value or ">" in value:
        raise ValidationError("A commit name may not contain <, > or control characters.", code="invalid")
    if value and not value.strip(_IDENT_CRUD):
        raise ValidationError("A commit name needs a letter or digit, not only punctuation.", code="invalid")


def validate_commit_email(value: str) -> None:
    """An e-mail address for commits: on top of Django's own check (which accepts a quoted local
    part holding almost anything), nothing git would misread in an ident line."""
    if _has_control(value) or any(c in value for c in "<> "):
        raise ValidationError(
            "A commit e-mail may not contain <, >, spaces or control characters.", code="invalid"
        )
