"""PostgreSQL: pg_trgm GIN indexes answer code searches (ILIKE for literals, `~` for regular
expressions); full-text search (a generated tsvector column with a GIN index, queried with
websearch_to_tsquery) answers prose. See search/migrations/0002_engines.py."""

from __future__ import annotations

from search.engines import Statement, Visible, commits_statement
from search.query import Query

TSQUERY = "websearch_to_tsquery('simple'::regconfig, %s)"


class PostgresEngine:
    vendor = "postgresql"

    def code(self, query: Query, visible: Visible) -> Statement:
        if query.regex:
            match, pattern = "content ~ %s OR path ~ %s", query.text
            first = "c.path ~ %s"
        else:
            match, pattern = "content ILIKE %s ESCAPE '\\' OR path ILIKE %s ESCAPE '\\'", query.like_pattern()
            first = "c.path ILIKE %s ESCAPE '\\'"
        return Statement(
            key="c.id",
            repository="c.repository_id",
            # The trigram indexes find the matches first (OFFSET 0 keeps the planner from
            # folding the subquery into the join, where it scanned every file of the readable
            # repositories instead), then the visibility join keeps the readable ones.
            body=(
                f"FROM (SELECT id, repository_id, path FROM search_codefile WHERE {match} OFFSET 0) c "  # noqa: S608 - our SQL
                f"WHERE c.repository_id IN ({visible.sql})"
            ),
            params=[pattern, pattern, *visible.params],
            # Files whose path matches first, then shallow paths before deep ones.
            order=f"({first}) DESC, length(c.path), c.id",
            order_params=[pattern],
            # The planner prices ILIKE over a TOASTed text like a comparison, and picks a
            # sequential scan of a small table that costs 100 ms where the index takes 2 ms.
            prelude=("SET LOCAL enable_seqscan = off",),
        )

    def commits(self, query: Query, visible: Visible) -> Statement:
        return commits_statement(f"e.document @@ {TSQUERY}", [query.text], query, visible)

    def repositories(self, query: Query, visible: Visible) -> Statement:
        like = query.like_pattern()
        return Statement(
            key="r.repository_id",
            repository="r.repository_id",
            body=(
                f"FROM search_repositoryentry r WHERE r.repository_id IN ({visible.sql}) AND "
                f"(r.document @@ {TSQUERY} OR r.name ILIKE %s ESCAPE '\\' "
                "OR (r.owner_name || '/' || r.name) ILIKE %s ESCAPE '\\')"
            ),
            params=[*visible.params, query.text, like, like],
            order=f"lower(r.name) = lower(%s) DESC, ts_rank(r.document, {TSQUERY}) DESC, r.name, r.repository_id",
            order_params=[query.text, query.text],
        )

    def proposals(self, query: Query, visible: Visible) -> Statement:
        match = f"p.document @@ {TSQUERY}"
        params: list[str | int] = [query.text]
        if query.number is not None:
            match += " OR p.number = %s"
            params.append(query.number)
        return Statement(
            key="p.proposal_id",
            repository="p.repository_id",
            body=f"FROM search_proposalentry p WHERE p.repository_id IN ({visible.sql}) AND ({match})",
            params=[*visible.params, *params],
            order=f"ts_rank(p.document, {TSQUERY}) DESC, p.proposal_id DESC",
            order_params=[query.text],
        )

    def users(self, query: Query, visible: Visible) -> Statement:
        return Statement(
            key="u.user_id",
            repository="",
            body=f"FROM search_userentry u WHERE u.document @@ {TSQUERY} OR u.username ILIKE %s ESCAPE '\\'",
            params=[query.text, query.like_pattern()],
            order="lower(u.username) = lower(%s) DESC, u.username",
            order_params=[query.text],
        )
