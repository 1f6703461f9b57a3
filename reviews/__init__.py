"""Change proposals: review and merge of workspace refs (issue 6, items 2 and 3)."""
