"""The engines' structures over the index tables, per database vendor.

PostgreSQL: pg_trgm with GIN trigram indexes on code (paths and contents), and a generated
tsvector column with a GIN index on each prose table. SQLite: FTS5 tables with external content
(the index tables), kept by triggers: trigram-tokenized for code, unicode61 for prose."""

from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations

# (table, its key column, the text columns) of each prose table.
PROSE = [
    ("search_commitentry", "id", ["message", "author_name", "author_email"]),
    ("search_repositoryentry", "repository_id", ["owner_name", "name", "description"]),
    ("search_proposalentry", "proposal_id", ["title", "description", "author_name"]),
    ("search_userentry", "user_id", ["username", "display_name"]),
]


def _postgres() -> list[str]:
    sql = [
        "CREATE INDEX search_code_content_trgm ON search_codefile USING gin (content gin_trgm_ops)",
        "CREATE INDEX search_code_path_trgm ON search_codefile USING gin (path gin_trgm_ops)",
    ]
    for table, _key, columns in PROSE:
        text = " || ' ' || ".join(columns)
        sql += [
            f"ALTER TABLE {table} ADD COLUMN document tsvector "
            f"GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, {text})) STORED",
            f"CREATE INDEX {table}_document ON {table} USING gin (document)",
        ]
    return sql


def _fts(table: str, key: str, columns: list[str], tokenize: str) -> list[str]:
    fts = table.replace("search_", "search_fts_")
    cols = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    delete = f"INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.{key}, {old});"  # noqa: S608 - fixed names
    insert = f"INSERT INTO {fts}(rowid, {cols}) VALUES (new.{key}, {new});"  # noqa: S608 - fixed names
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5({cols}, content='{table}', content_rowid='{key}', "
        f"tokenize='{tokenize}')",
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN {insert} END",
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN {delete} END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE ON {table} BEGIN {delete} {insert} END",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",  # noqa: S608 - fixed names
    ]


def _sqlite() -> list[str]:
    sql = _fts("search_codefile", "id", ["path", "content"], "trigram")
    for table, key, columns in PROSE:
        sql += _fts(table, key, columns, "unicode61 remove_diacritics 2")
    return sql


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    statements = _postgres() if vendor == "postgresql" else _sqlite() if vendor == "sqlite" else []
    for statement in statements:
        schema_editor.execute(statement)


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    tables = ["search_codefile"] + [table for table, _key, _columns in PROSE]
    for table in tables:
        if vendor == "sqlite":
            schema_editor.execute(f"DROP TABLE IF EXISTS {table.replace('search_', 'search_fts_')}")
        elif vendor == "postgresql" and table != "search_codefile":
            schema_editor.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS document")
    if vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS search_code_content_trgm")
        schema_editor.execute("DROP INDEX IF EXISTS search_code_path_trgm")


class Migration(migrations.Migration):
    dependencies = [("search", "0001_initial")]

    operations = [
        # A no-op on other databases (Django checks the vendor).
        TrigramExtension(),
        migrations.RunPython(forwards, backwards),
    ]
