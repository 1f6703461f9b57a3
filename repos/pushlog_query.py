"""The pushlog's query: hg.mozilla.org's json-pushes parameters (and hostsite's own), parsed
and checked once for every exit that takes them (json-pushes, the Pushlog page, the API).
A bad parameter is a PushlogQueryError with a message for the client, answered 400."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from gitcore.oids import SHA1, ObjectFormat

DEFAULT_COUNT = 10
PAGE_MAX = 500


class PushlogQueryError(ValueError):
    pass


@dataclass(frozen=True)
class Query:
    start_id: int | None = None
    end_id: int | None = None
    start_date: datetime | None = None
    end_date: datetime | None = None
    from_change: str | None = None
    to_change: str | None = None
    changeset: str | None = None
    user: str | None = None
    ref: str | None = None
    tips_only: bool = False
    full: bool = False
    version: int = 1
    workspaces: bool = True

    @property
    def ranged(self) -> bool:
        return any(
            v is not None
            for v in (
                self.start_id,
                self.end_id,
                self.start_date,
                self.end_date,
                self.from_change,
                self.to_change,
                self.changeset,
            )
        )


def _int(params, name):
    value = params.get(name)
    if value in (None, ""):
        return None
    try:
        number = int(value)
    except ValueError:
        raise PushlogQueryError(f"{name} must be an integer") from None
    if not 0 <= number < 2**63:  # beyond it, the database's integers overflow
        raise PushlogQueryError(f"{name} must be between 0 and 2**63 - 1")
    return number


def _date(params, name):
    value = (params.get(name) or "").strip()
    if not value:
        return None
    if re.fullmatch(r"\d{1,12}(\s+[+-]?\d+)?", value):  # a unix time, optionally with hg's offset
        try:
            return datetime.fromtimestamp(int(value.split()[0]), tz=UTC)
        except (ValueError, OverflowError, OSError):
            raise PushlogQueryError(f"{name}: {value[:40]!r} is out of range") from None
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(value, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise PushlogQueryError(
        f"{name}: cannot parse date {value[:40]!r} (use YYYY-MM-DD[ HH:MM:SS] or a unix time)"
    )


def _flag(params, name) -> bool:
    return (params.get(name) or "").lower() in {"1", "true", "yes", "on"}


def _sha(params, name, fmt: ObjectFormat):
    value = (params.get(name) or "").strip()
    if not value:
        return None
    found = fmt.parse_prefix(value)
    if found is None:
        raise PushlogQueryError(f"{name} must be a commit hash")
    return found


def _text(params, name):
    value = (params.get(name) or "").strip()
    if len(value) > 255:  # RefUpdate.ref's length
        raise PushlogQueryError(f"{name} is too long")
    return value or None


def ref_names(ref: str) -> set[str]:
    """The full ref names a `ref` filter matches: itself, or a branch or tag of that name."""
    if ref.startswith("refs/"):
        return {ref}
    return {f"refs/heads/{ref}", f"refs/tags/{ref}"}


def parse_query(params, fmt: ObjectFormat = SHA1) -> Query:
    """The query's filters; commit hashes are read for the repository's object format."""
    version = params.get("version") or "1"
    if version not in {"1", "2"}:
        raise PushlogQueryError("version must be 1 or 2")
    return Query(
        start_id=_int(params, "startID"),
        end_id=_int(params, "endID"),
        start_date=_date(params, "startdate"),
        end_date=_date(params, "enddate"),
        from_change=_sha(params, "fromchange", fmt),
        to_change=_sha(params, "tochange", fmt),
        changeset=_sha(params, "changeset", fmt),
        user=(params.get("user") or None),
        ref=_text(params, "ref"),
        tips_only=_flag(params, "tipsonly"),
        # hg: "If this parameter is present (the value is ignored)".
        full="full" in params,
        version=int(version),
        workspaces=(params.get("workspaces", "1") != "0"),
    )
