"""One query module per database engine behind one interface (search/backend.py picks one).

Each engine turns a checked Query into a `Statement` per kind: SQL with placeholders and its
parameters, never the user's text formatted into the SQL. `visible` is the SQL of the
repositories the viewer may read (repos.selectors.visible_repositories), which every statement
about repository content joins, so a query can only ever return rows of those repositories."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol

from search.query import Query


@dataclass(frozen=True)
class Visible:
    sql: str
    params: tuple


@dataclass(frozen=True)
class Statement:
    key: str  # the selected id column
    body: str  # FROM ... WHERE ...
    repository: str  # the repository id column ("" for users)
    params: list = field(default_factory=list)
    order: str = "1"
    order_params: list = field(default_factory=list)
    # Statements of the engine's own (no parameters) run first in the same transaction.
    prelude: tuple[str, ...] = ()

    def ids_sql(self, offset: int, limit: int) -> tuple[str, list]:
        sql = f"SELECT {self.key} {self.body} ORDER BY {self.order} LIMIT %s OFFSET %s"
        return sql, [*self.params, *self.order_params, limit, offset]

    def within(self, repository_ids: list[int]) -> Statement:
        """The same search in these repositories only."""
        marks = ", ".join(["%s"] * len(repository_ids))
        return replace(
            self,
            body=f"{self.body} AND {self.repository} IN ({marks})",
            params=[*self.params, *repository_ids],
        )

    def count_sql(self, cap: int) -> tuple[str, list]:
        # Counting every match of a common word over a large index costs as much as finding
        # them all: counts stop at `cap`.
        sql = f"SELECT count(*) FROM (SELECT 1 {self.body} LIMIT %s) counted"  # noqa: S608 - our SQL; values are parameters
        return sql, [*self.params, cap]


def commits_statement(match: str, params: list, query: Query, visible: Visible) -> Statement:
    """Commits whose text matches (`match`, the engine's own test of `e`'s text, with its
    `params`) or whose id starts with the query's hex prefix: the same for every engine."""
    if query.sha_prefix:
        match += " OR e.sha LIKE %s"
        params = [*params, query.sha_prefix + "%"]
    return Statement(
        key="e.id",
        repository="e.repository_id",
        body=f"FROM search_commitentry e WHERE e.repository_id IN ({visible.sql}) AND ({match})",
        params=[*visible.params, *params],
        order="e.committed_at DESC, e.id DESC",
    )


class Engine(Protocol):
    vendor: str

    def code(self, query: Query, visible: Visible) -> Statement: ...
    def commits(self, query: Query, visible: Visible) -> Statement: ...
    def repositories(self, query: Query, visible: Visible) -> Statement: ...
    def proposals(self, query: Query, visible: Visible) -> Statement: ...
    def users(self, query: Query, visible: Visible) -> Statement: ...
