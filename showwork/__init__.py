"""Show work: the nameless DAG of everyone's unfinished work (issue 7)."""
