"""Lane layout on crafted DAGs, checked through the exact text rendering (issue 7, item 2)."""

import time

from showwork.layout import Link, layout
from showwork.model import Graph
from tests.showwork.graphs import DAY, HOUR, base, draft, text, tip


def lines(*rows):
    return "".join(row + "\n" for row in rows)


def test_single_stack_is_one_straight_column():
    graph = Graph(
        [
            draft("c3", "c2", subject="Third", labels=("alice/stack",)),
            draft("c2", "c1", subject="Second", age=2 * HOUR),
            draft("c1", "b0", subject="First", age=3 * HOUR),
            tip("b0", subject="Release 2.0"),
        ]
    )
    assert text(*graph.nodes) == lines(
        "@  c3  Third (alice, 1 hour)  alice/stack",
        "*  c2  Second (alice, 2 hours)",
        "*  c1  First (alice, 3 hours)",
        "o  b0  Release 2.0  main",
    )
    result = layout(graph)
    assert result.columns == 1
    assert [row.column for row in result.rows] == [0, 0, 0, 0]
    assert result.rows[0].links == (Link(0, 0, 0, True),)
    assert result.rows[-1].links == ()


def test_two_heads_on_one_base_join_where_the_second_head_appears():
    assert text(
        draft("a2", "a1", subject="A two", labels=("alice/a",), age=DAY),
        draft("a1", "base", subject="A one", age=2 * DAY),
        draft("b1", "base", owner="bob", subject="B one", labels=("bob/b",), age=3 * HOUR),
        tip("base", subject="Base"),
    ) == lines(
        "@  a2  A two (alice, 1 day)  alice/a",
        "*  a1  A one (alice, 2 days)",
        "| @  b1  B one (bob, 3 hours)  bob/b",
        "|/",
        "o  base  Base  main",
    )


def test_the_issue_example_with_an_elided_edge_to_the_base():
    assert text(
        draft("4f2a1c9e", "91ab30d2", subject="Fix parser", labels=("alice/fix-parser",), age=2 * DAY),
        draft("91ab30d2", "e1f2a3b4", subject="Add tokenizer", age=3 * DAY),
        draft("77e0c1aa", "e1f2a3b4", owner="bob", subject="Docs for widgets", labels=("bob/docs",)),
        tip("e1f2a3b4", ("0a1b2c3d", 120), subject="Merge branch 'next'"),
        base("0a1b2c3d", subject="Release 2.0"),
    ) == lines(
        "@  4f2a1c9e  Fix parser (alice, 2 days)  alice/fix-parser",
        "*  91ab30d2  Add tokenizer (alice, 3 days)",
        "| @  77e0c1aa  Docs for widgets (bob, 1 hour)  bob/docs",
        "|/",
        "o  e1f2a3b4  Merge branch 'next'  main",
        ":  (120 commits)",
        "o  0a1b2c3d  Release 2.0",
    )


def test_six_parallel_heads_on_three_bases():
    assert text(
        draft("h1", "b1"),
        draft("h2", "b1", owner="bob"),
        draft("h3", "b2"),
        draft("h4", "b2", owner="bob"),
        tip("main", ("b1", 10)),
        base("b1", ("b2", 5)),
        draft("h5", "b3", owner="carol"),
        draft("h6", "b3", owner="dave"),
        base("b2", ("b3", 7)),
        base("b3"),
    ) == lines(
        "*  h1  H1 (alice, 1 hour)",
        "| *  h2  H2 (bob, 1 hour)",
        "|/",
        "| *  h3  H3 (alice, 1 hour)",
        "| | *  h4  H4 (bob, 1 hour)",
        "| |/",
        "| | o  main  Main  main",
        "|-+-'  (10 commits)",
        "o |  b1  B1",
        ": |  (5 commits)",
        ": | *  h5  H5 (carol, 1 hour)",
        ": | | *  h6  H6 (dave, 1 hour)",
        ": | |/",
        ":/  |",
        "o   |  b2  B2",
        ":---'  (7 commits)",
        "o  b3  B3",
    )


def test_merge_forks_into_a_second_column():
    graph = Graph(
        [
            draft("m", "d1", "t", labels=("alice/merge",)),
            draft("d1", "b"),
            tip("t", ("b", 4)),
            base("b"),
        ]
    )
    assert text(*graph.nodes) == lines(
        "@  m  M (alice, 1 hour)  alice/merge",
        "|\\",
        "* |  d1  D1 (alice, 1 hour)",
        "| o  t  T  main",
        "|/  (4 commits)",
        "o  b  B",
    )
    assert layout(graph).rows[0].links == (Link(0, 0, 0, True), Link(0, 1, 0, True))


def test_octopus_merge_fans_out_and_folds_back():
    assert text(
        draft("m", "a", "b", "c", labels=("alice/octo",)),
        draft("a", "base"),
        draft("b", "base"),
        draft("c", "base"),
        base("base"),
    ) == lines(
        "@  m  M (alice, 1 hour)  alice/octo",
        "|-.-.",
        "* | |  a  A (alice, 1 hour)",
        "| * |  b  B (alice, 1 hour)",
        "|/  |",
        "|   *  c  C (alice, 1 hour)",
        "|---'",
        "o  base  Base",
    )


def test_fork_and_merge_in_one_gap_take_two_lines():
    # x forks into two columns while the dashed line from t folds into n, the next row.
    assert text(
        draft("a", "n"),
        tip("t", ("n", 5)),
        draft("x", "y", "z"),
        base("n"),
        draft("y"),
        draft("z"),
    ) == lines(
        "*  a  A (alice, 1 hour)",
        "| o  t  T  main",
        "| :  (5 commits)",
        "| : *  x  X (alice, 1 hour)",
        "| : |\\",
        "|/  | |",
        "o   | |  n  N",
        "    * |  y  Y (alice, 1 hour)",
        "      *  z  Z (alice, 1 hour)",
    )


def test_deep_stack_stays_in_one_column():
    count = 200
    nodes = [draft(f"c{i}", f"c{i + 1}") for i in range(count - 1)]
    nodes.append(tip(f"c{count - 1}"))
    started = time.perf_counter()
    result = layout(Graph(nodes))
    elapsed = time.perf_counter() - started
    assert result.columns == 1
    assert {row.column for row in result.rows} == {0}
    assert len(result.rows) == count
    assert elapsed < 1.0


def test_elided_edges_between_public_commits_keep_their_own_columns():
    graph = Graph(
        [
            tip("main", ("b1", 120)),
            tip("rel", ("b2", 3), branch="release"),
            base("b1", ("b2", 30)),
            base("b2"),
        ]
    )
    assert text(*graph.nodes) == lines(
        "o  main  Main  main",
        ":  (120 commits)",
        ": o  rel  Rel  release",
        ": :  (3 commits)",
        "o :  b1  B1",
        ":/  (30 commits)",
        "o  b2  B2",
    )
    assert layout(graph).rows[2].passing == ((1, 3),)
    assert layout(graph).edges() == [("main", "b1", 120), ("rel", "b2", 3), ("b1", "b2", 30)]


def test_parents_outside_the_graph_are_dropped():
    graph = Graph([draft("lone", "gone", labels=("alice/lone",)), draft("x", "b"), base("b")])
    result = layout(graph)
    assert result.rows[0].parents == ()
    assert result.rows[0].links == ()
    # A blank line keeps x from reading as lone's parent.
    assert text(*graph.nodes) == lines(
        "@  lone  Lone (alice, 1 hour)  alice/lone",
        "",
        "*  x  X (alice, 1 hour)",
        "o  b  B",
    )


def test_a_parent_above_its_child_is_dropped_rather_than_left_waiting():
    result = layout(Graph([draft("p"), draft("c", "p")]))
    assert [row.parents for row in result.rows] == [(), ()]
    assert result.columns == 1


def test_freed_columns_are_reused_by_later_lines():
    graph = Graph([draft("a", "b"), draft("c", "d"), draft("b"), draft("e", "f"), draft("d"), draft("f")])
    result = layout(graph)
    assert [row.column for row in result.rows] == [0, 1, 0, 0, 1, 0]
    assert result.columns == 2
    assert text(*graph.nodes) == lines(
        "*  a  A (alice, 1 hour)",
        "| *  c  C (alice, 1 hour)",
        "* |  b  B (alice, 1 hour)",
        "  |",
        "* |  e  E (alice, 1 hour)",
        "| *  d  D (alice, 1 hour)",
        "*  f  F (alice, 1 hour)",
    )


def test_a_merge_parent_already_expected_joins_its_column():
    assert text(draft("x", "z"), draft("y", "z"), draft("w", "v", "z"), draft("z"), draft("v")) == lines(
        "*  x  X (alice, 1 hour)",
        "| *  y  Y (alice, 1 hour)",
        "|/",
        "| *  w  W (alice, 1 hour)",
        "|/|",
        "* |  z  Z (alice, 1 hour)",
        "  *  v  V (alice, 1 hour)",
    )


def test_empty_graph():
    result = layout(Graph([]))
    assert result.rows == ()
    assert result.columns == 0
    assert text() == ""


def test_layout_is_deterministic():
    nodes = [
        draft("h1", "b1"),
        draft("m", "h2", "b2", "b1"),
        draft("h2", "b1", owner="bob"),
        tip("main", ("b1", 10)),
        base("b1", ("b2", 5)),
        base("b2"),
    ]
    first = layout(Graph(list(nodes)))
    for _ in range(3):
        assert layout(Graph(list(nodes))) == first
        assert text(*nodes) == text(*nodes)
