"""Text, SVG and JSON renderings of the Work graph (issue 7, item 3)."""

import json
import xml.etree.ElementTree as ET

import pytest

from showwork.age import describe_age
from showwork.layout import layout
from showwork.model import Graph, GraphNode
from showwork.render_json import to_json
from showwork.render_svg import ROW_HEIGHT, render_svg, row_centers, safe_url
from showwork.render_text import render_text
from tests.showwork.graphs import DAY, NOW, base, draft, text, tip

SVG = "{http://www.w3.org/2000/svg}"


def sample() -> Graph:
    return Graph(
        [
            draft("a2", "a1", subject="Fix parser", labels=("alice/fix",), url="/acme/widgets/proposals/7"),
            draft("a1", "t", subject="Add tokenizer"),
            draft("m", "b1", "t", owner="bob", subject="Merge", labels=("bob/merge",)),
            draft("b1", "old", owner="bob"),
            tip("t", ("old", 120)),
            tip("r", ("old", 3), branch="release"),
            base("old", subject="Release 2.0"),
        ],
        more=5,
    )


def svg_of(graph: Graph) -> ET.Element:
    return ET.fromstring(render_svg(graph, layout(graph), now=NOW))  # noqa: S314 - our own markup


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (-30, "just now"),
        (59, "just now"),
        (60, "1 minute"),
        (3599, "59 minutes"),
        (3600, "1 hour"),
        (2 * DAY, "2 days"),
        (13 * DAY, "13 days"),
        (14 * DAY, "2 weeks"),
        (45 * DAY, "1 month"),
        (800 * DAY, "2 years"),
    ],
)
def test_age(seconds, expected):
    assert describe_age(NOW - seconds, NOW) == expected


def test_text_notes_what_the_cap_left_out_and_keeps_each_commit_on_one_line():
    output = text(draft("a", subject="Line one\nForged  row"), more=42)
    assert output == "*  a  Line one Forged row (alice, 1 hour)\n(42 more not shown)\n"


def test_text_falls_back_to_the_full_hash_prefix_and_the_author():
    node = GraphNode(
        sha="0123456789abcdef", parents=(), kind="draft", subject="S", author="Ann", when=NOW - 120
    )
    graph = Graph([node])
    assert render_text(graph, layout(graph), now=NOW) == "*  0123456789ab  S (Ann, 2 minutes)\n"


def test_svg_is_well_formed_with_one_focusable_named_link_per_node():
    graph = sample()
    root = svg_of(graph)
    links = root.findall(f".//{SVG}a")
    assert len(links) == len(graph.nodes)
    for link, node in zip(links, graph.nodes, strict=True):
        assert link.get("tabindex") == "0"
        assert link.get("aria-label") == f"{node.short} {node.subject}"
        assert link.find(f"{SVG}title").text == f"{node.short} {node.subject}"
    assert links[0].get("href") == "/acme/widgets/proposals/7"
    assert links[1].get("href") == "/acme/widgets/commit/a1"
    # Drafts filled, public commits hollow.
    assert [link.get("class") for link in links[3:6]] == [
        "sw-row sw-draft",
        "sw-row sw-public sw-tip",
        "sw-row sw-public sw-tip",
    ]
    assert links[4].find(f"{SVG}circle").get("fill") == "none"
    assert links[0].find(f"{SVG}circle").get("fill") == "currentColor"
    labels = [span.text for span in root.iter(f"{SVG}tspan") if span.get("class") == "sw-label"]
    assert labels == ["alice/fix", "bob/merge", "main", "release"]
    assert root.find(f"{SVG}text[@class='sw-more']").text == "5 more not shown"


def test_svg_draws_one_dashed_path_per_elided_edge_with_its_count():
    graph = sample()
    root = svg_of(graph)
    paths = root.findall(f"{SVG}path")
    dashed = [path for path in paths if "sw-elided" in path.get("class")]
    elided = [edge for edge in layout(graph).edges() if edge[2]]
    assert len(elided) == 2
    assert len(dashed) == len(elided)
    assert sorted(path.find(f"{SVG}title").text for path in dashed) == ["120 commits", "3 commits"]
    counts = sorted(t.text for t in root.findall(f"{SVG}text[@class='sw-count']"))
    assert counts == ["120 commits", "3 commits"]
    solid = [path for path in paths if path.get("class") == "sw-edge"]
    assert len(solid) == 1  # every solid segment in one path
    assert all(path.get("stroke-dasharray") for path in dashed)


def test_svg_rows_leave_room_for_counts_below_elided_edges():
    graph = Graph([tip("t", ("b", 9)), base("b"), draft("x")])
    assert row_centers(layout(graph)) == [
        ROW_HEIGHT // 2,
        ROW_HEIGHT // 2 + ROW_HEIGHT + 18,
        ROW_HEIGHT // 2 + 2 * ROW_HEIGHT + 18,
    ]


XSS = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>']


@pytest.mark.parametrize("evil", XSS)
def test_svg_escapes_subjects_owners_and_labels(evil):
    graph = Graph([draft("a", subject=evil, owner=evil, labels=(evil,), url="/x/" + evil)])
    markup = render_svg(graph, layout(graph), now=NOW)
    assert "<script" not in markup
    assert "<img" not in markup
    root = ET.fromstring(markup)  # noqa: S314 - our own markup
    assert root.find(f".//{SVG}script") is None
    assert root.find(f".//{SVG}img") is None
    link = root.find(f"{SVG}a")
    # No attribute smuggled in by closing a quote.
    assert set(link.attrib) == {"class", "href", "tabindex", "aria-label"}
    assert link.get("aria-label") == f"a {evil}"
    spans = {span.get("class"): span.text for span in link.iter(f"{SVG}tspan")}
    assert spans["sw-subject"] == evil
    assert spans["sw-label"] == evil
    assert evil in spans["sw-meta"]
    # A site path is kept (escaped, it is inert); one with whitespace is not a URL we made.
    assert link.get("href") == ("#" if " " in evil else "/x/" + evil)


def test_svg_replaces_characters_xml_forbids():
    graph = Graph([draft("a", subject="bell\x07 and \udcff")])
    root = svg_of(graph)
    assert root.find(f"{SVG}a").get("aria-label") == "a bell\ufffd and \ufffd"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("/acme/widgets/commit/abc", "/acme/widgets/commit/abc"),
        ("https://example.org/p/1", "https://example.org/p/1"),
        ("HTTP://example.org/", "HTTP://example.org/"),
        ("javascript:alert(1)", "#"),
        ("JaVaScRiPt:alert(1)", "#"),
        (" javascript:alert(1)", "#"),
        ("java\tscript:alert(1)", "#"),
        ("data:text/html,<script>alert(1)</script>", "#"),
        ("//evil.example/", "#"),
        ("/\\evil.example/", "#"),
        ("https:evil", "#"),
        ("relative/path", "#"),
        ("", "#"),
    ],
)
def test_safe_url(url, expected):
    assert safe_url(url) == expected


def test_svg_neutralizes_a_javascript_url():
    graph = Graph([draft("a", url="javascript:alert(document.cookie)")])
    markup = render_svg(graph, layout(graph), now=NOW)
    assert "javascript" not in markup
    assert svg_of(graph).find(f"{SVG}a").get("href") == "#"


def test_svg_of_an_empty_graph_is_still_well_formed():
    root = svg_of(Graph([]))
    assert root.findall(f"{SVG}a") == []


def test_json_lists_nodes_with_their_places_and_edges_with_their_kind():
    graph = sample()
    data = to_json(graph, layout(graph))
    assert json.loads(json.dumps(data)) == data
    assert data["more"] == 5
    assert data["columns"] == layout(graph).columns
    first = data["nodes"][0]
    assert first == {
        "sha": "a2",
        "short": "a2",
        "kind": "draft",
        "subject": "Fix parser",
        "author": "alice",
        "when": NOW - 3600,
        "owner": "alice",
        "labels": ["alice/fix"],
        "url": "/acme/widgets/proposals/7",
        "row": 0,
        "column": 0,
    }
    assert [node["row"] for node in data["nodes"]] == list(range(len(graph.nodes)))
    assert {"from": "t", "to": "old", "elided": 120, "kind": "dashed"} in data["edges"]
    assert {"from": "m", "to": "t", "elided": 0, "kind": "solid"} in data["edges"]
    assert len(data["edges"]) == 7


def test_svg_draws_a_straight_stack_as_one_line():
    nodes = [draft(f"c{i}", f"c{i + 1}") for i in range(199)] + [tip("c199")]
    root = svg_of(Graph(nodes))
    (path,) = root.findall(f"{SVG}path")
    assert path.get("d") == f"M16 {ROW_HEIGHT // 2}V{ROW_HEIGHT // 2 + 199 * ROW_HEIGHT}"


def test_a_long_dashed_edge_is_one_straight_stretch():
    """release's edge down to `old` passes the twelve rows of main's line: one V for the
    whole stretch, not one per row."""
    nodes = [tip("r", ("old", 3), branch="release"), tip("t", "s9")]
    nodes += [base(f"s{i}", f"s{i - 1}" if i else "old") for i in range(9, -1, -1)]
    graph = Graph([*nodes, base("old")])
    lay = layout(graph)
    ys = row_centers(lay)
    root = svg_of(graph)
    (dashed,) = [p for p in root.findall(f"{SVG}path") if "sw-elided" in p.get("class")]
    d = dashed.get("d")
    assert d.count("V") == 1, d
    assert d.endswith(f"V{ys[-1]}")  # it lands on `old`, the last row
