"""Every ref namespace the platform uses is spelled in one module, repos/hooks/refspace.py: a
string literal naming one anywhere else in the product (apps, hooks, bench/) fails this test.

Comments and docstrings may name namespaces (they explain), and so may tests, docs and old
migrations: tests push and fetch as users do, with the names users type, and a migration is a
record of its time."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OWNER = ROOT / "repos" / "hooks" / "refspace.py"
SKIPPED_DIRS = {"tests", "migrations", "docs", ".venv", "var", "node_modules", "static", "templates"}
# The platform's own namespaces. Git's (refs/heads/, refs/tags/, refs/remotes/) are git's
# vocabulary and stay readable where code talks git.
NAMESPACE = re.compile(
    r"refs/(users|for|archive|takedown|imported|replica-seed|bench)\b|refs/heads/bundle-tags"
)
_BREAKS = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT}


def product_files() -> list[Path]:
    return sorted(
        path
        for path in ROOT.rglob("*.py")
        if not SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts) and path != OWNER
    )


def literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string literal that is not a docstring (a string alone as a statement)."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.NL]
    found = []
    for i, token in enumerate(tokens):
        if token.type != tokenize.STRING:
            continue
        before = tokens[i - 1].type if i else tokenize.NEWLINE
        after = tokens[i + 1].type if i + 1 < len(tokens) else tokenize.NEWLINE
        if before in _BREAKS and after in (tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.COMMENT):
            continue  # a docstring, or a string statement that says why
        found.append((token.start[0], token.string))
    return found


def test_the_scanner_sees_literals_and_skips_docstrings():
    source = '"""A docstring about refs/users/."""\nx = f"refs/users/{u}/"  # refs/for/\n'
    assert [text for _line, text in literals(source)] == ['f"refs/users/{u}/"']


def test_no_ref_namespace_literal_outside_refspace():
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {text[:80]}"
        for path in product_files()
        for line, text in literals(path.read_text())
        if NAMESPACE.search(text)
    ]
    assert not offenders, "spell these with repos.hooks.refspace:\n" + "\n".join(offenders)
