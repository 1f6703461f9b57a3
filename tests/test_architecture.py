"""docs/architecture.md's claims about the import graph, held against the code and against the
import-linter contract that `make check` runs: the page's layer diagram is the contract's list,
every app has its place in it, no file imports itself back through others, an import inside a
function says why, and every task is sent through repos.enqueue."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import grimp
import pytest
from django.conf import settings

from hostsite.celery import app

BASE_DIR = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((BASE_DIR / "pyproject.toml").read_text())["tool"]["importlinter"]
PACKAGES = CONFIG["root_packages"]
# The one module that sends (repos.enqueue), and the Celery app's task class, which holds
# messages back and sends them (hostsite.celery).
SENDERS = {BASE_DIR / "repos" / "enqueue.py", BASE_DIR / "hostsite" / "celery.py"}


def contract_layers() -> list[str]:
    (layers,) = [c["layers"] for c in CONFIG["contracts"] if c["type"] == "layers"]
    return layers


def documented_layers() -> list[str]:
    """The first fenced block under the page's "The layers" heading, a layer a line."""
    page = (BASE_DIR / "docs" / "architecture.md").read_text()
    section = page.split("\n## The layers\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```\n(.*?)^```", section, re.DOTALL | re.MULTILINE)
    assert block is not None, "docs/architecture.md: no diagram under 'The layers'"
    return [line.strip() for line in block[1].splitlines() if line.strip()]


def apps_of(layers: list[str]) -> list[str]:
    return [name.strip() for layer in layers for name in layer.split("|")]


def product_files() -> list[Path]:
    return sorted(
        path
        for package in PACKAGES
        for path in (BASE_DIR / package).rglob("*.py")
        if "migrations" not in path.parts
    )


def test_the_pages_diagram_is_the_contract():
    assert documented_layers() == contract_layers()


# Layers that are plain packages, not Django apps: settings (hostsite), rendering (render) and
# the git plumbing (gitcore), which have no models, templates, template tags or checks for
# Django to find.
PLAIN_PACKAGES = {"hostsite", "render", "gitcore"}


def test_every_app_has_one_place_in_the_layers():
    own = {name for name in settings.INSTALLED_APPS if (BASE_DIR / name).is_dir()}
    placed = apps_of(contract_layers())
    assert sorted(placed) == sorted(own | PLAIN_PACKAGES) == sorted(PACKAGES)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module, without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_module_imports_itself_back():
    """Imports inside functions count: grimp reads every import statement of a module."""
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    edges = {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}
    # A package's __init__ importing its own submodules is no cycle of files.
    edges = {m: {n for n in targets if not m.startswith(n + ".")} for m, targets in edges.items()}
    assert strongly_connected(edges) == []


def function_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Each import of the project's packages made inside a function."""
    found = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            if any(name.split(".")[0] in PACKAGES for name in names):
                found.append(node)
    return found


def test_an_import_inside_a_function_says_why():
    """On its own lines, or on the line above it or above the imports right before it."""
    unexplained = []
    for path in product_files():
        text = path.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        imports = {n.lineno: n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)}
        covered = {line for n in imports.values() for line in range(n.lineno, (n.end_lineno or n.lineno) + 1)}
        for node in function_imports(tree):
            own = lines[node.lineno - 1 : node.end_lineno]
            above = node.lineno - 1
            while above in covered:
                above -= 1
            if not (any("#" in line for line in own) or lines[above - 1].strip().startswith("#")):
                unexplained.append(f"{path.relative_to(BASE_DIR)}:{node.lineno}: {ast.unparse(node)}")
    assert unexplained == []


SEND = re.compile(r"\.(?:delay|apply_async|send_task)\(")
ENQUEUED = re.compile(r"enqueue\.(?:send|after_commit)\(\s*\"([\w.]+)\"")


def test_every_task_is_sent_through_enqueue():
    direct = [
        f"{path.relative_to(BASE_DIR)}:{number}"
        for path in product_files()
        if path not in SENDERS
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if SEND.search(line) and not line.lstrip().startswith("#")
    ]
    assert direct == []


@pytest.mark.django_db
def test_every_task_name_sent_is_a_task():
    names = {name for path in product_files() for name in ENQUEUED.findall(path.read_text())}
    assert len(names) > 20  # the pattern still finds the calls
    app.loader.import_default_modules()
    assert sorted(names - set(app.tasks)) == []
