"""SQLite (the embedded default): FTS5 tables over the index tables, trigram-tokenized for code
and unicode61 for prose (search/migrations/0002_engines.py). The user's text always reaches
FTS5 as quoted strings (`"` doubled), so OR, NEAR, `*`, `^` and quotes in it are literals."""

from __future__ import annotations

from search.engines import Statement, Visible, commits_statement
from search.query import Query


def fts_string(text: str) -> str:
    """`text` as one FTS5 string: a phrase of its tokens, nothing in it an operator."""
    return '"' + text.replace('"', '""') + '"'


def fts_terms(query: Query) -> str:
    """Every word as a quoted prefix term, all required. Words with no letter or digit have no
    token and would match nothing: they are left out."""
    words = [word for word in query.terms if any(ch.isalnum() for ch in word)]
    return " ".join(fts_string(word) + "*" for word in words) or fts_string("")


def _in_fts(table: str) -> str:
    return f"(SELECT rowid FROM search_fts_{table} WHERE search_fts_{table} MATCH %s)"  # noqa: S608 - a table of ours


class SqliteEngine:
    vendor = "sqlite"

    def code(self, query: Query, visible: Visible) -> Statement:
        return Statement(
            key="c.id",
            repository="c.repository_id",
            body=(
                "FROM search_fts_codefile f JOIN search_codefile c ON c.id = f.rowid "
                f"WHERE search_fts_codefile MATCH %s AND c.repository_id IN ({visible.sql})"
            ),
            params=[fts_string(query.text), *visible.params],
            # bm25 with a path match worth ten in the contents.
            order="bm25(search_fts_codefile, 10.0, 1.0), length(c.path), c.id",
        )

    def commits(self, query: Query, visible: Visible) -> Statement:
        return commits_statement(f"e.id IN {_in_fts('commitentry')}", [fts_terms(query)], query, visible)

    def repositories(self, query: Query, visible: Visible) -> Statement:
        like = query.like_pattern()
        return Statement(
            key="r.repository_id",
            repository="r.repository_id",
            body=(
                f"FROM search_repositoryentry r WHERE r.repository_id IN ({visible.sql}) AND "
                f"(r.repository_id IN {_in_fts('repositoryentry')} OR r.name LIKE %s ESCAPE '\\' "
                "OR (r.owner_name || '/' || r.name) LIKE %s ESCAPE '\\')"
            ),
            params=[*visible.params, fts_terms(query), like, like],
            order="lower(r.name) = lower(%s) DESC, r.name, r.repository_id",
            order_params=[query.text],
        )

    def proposals(self, query: Query, visible: Visible) -> Statement:
        match = f"p.proposal_id IN {_in_fts('proposalentry')}"
        params: list[str | int] = [fts_terms(query)]
        if query.number is not None:
            match += " OR p.number = %s"
            params.append(query.number)
        return Statement(
            key="p.proposal_id",
            repository="p.repository_id",
            body=f"FROM search_proposalentry p WHERE p.repository_id IN ({visible.sql}) AND ({match})",
            params=[*visible.params, *params],
            order="p.proposal_id DESC",
        )

    def users(self, query: Query, visible: Visible) -> Statement:
        return Statement(
            key="u.user_id",
            repository="",
            body=f"FROM search_userentry u WHERE u.user_id IN {_in_fts('userentry')} OR u.username LIKE %s ESCAPE '\\'",
            params=[fts_terms(query), query.like_pattern()],
            order="lower(u.username) = lower(%s) DESC, u.username",
            order_params=[query.text],
        )
