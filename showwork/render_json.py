"""The Work graph as JSON for the API: the same nodes, rows and columns the pages draw.

Clients get the layout, not just the DAG, so a client drawing the graph itself (an editor
plugin, a CLI) shows the same lanes as the web page without reimplementing them.
"""

from __future__ import annotations

from typing import Any

from showwork.layout import Layout
from showwork.model import Graph


def to_json(graph: Graph, layout: Layout) -> dict[str, Any]:
    nodes = [
        {
            "sha": row.node.sha,
            "short": row.node.short,
            "kind": row.node.kind,
            "subject": row.node.subject,
            "author": row.node.author,
            "when": row.node.when,
            "owner": row.node.owner,
            "labels": list(row.node.labels),
            "url": row.node.url,
            "row": index,
            "column": row.column,
        }
        for index, row in enumerate(layout.rows)
    ]
    edges = [
        {"from": child, "to": parent, "elided": elided, "kind": "dashed" if elided else "solid"}
        for child, parent, elided in layout.edges()
    ]
    return {"nodes": nodes, "edges": edges, "columns": layout.columns, "more": graph.more}
