"""The parts of a line comment's Markdown that mean something to threads: a ```suggestion
fenced block, the replacement text it proposes for the thread's lines."""

from __future__ import annotations

import re

# CommonMark's fences: three or more backticks or tildes, indented at most three spaces.
_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*suggestion[ \t]*$")


def suggestion_text(body: str) -> list[str] | None:
    """The lines of the comment's first suggestion block (an empty list: remove the lines),
    or None when it has none. An unclosed block runs to the end, as in CommonMark."""
    lines = body.split("\n")
    for i, line in enumerate(lines):
        match = _OPEN.match(line)
        if not match:
            continue
        fence = match[1]
        close = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        block = []
        for inner in lines[i + 1 :]:
            if close.match(inner):
                break
            block.append(inner)
        return block
    return None
