"""Web editing without a clone or a fork: a file edited, added, uploaded or deleted in the
browser becomes a commit made server-side with git's plumbing (no working tree), stored in the
editor's workspace or, for maintainers who choose it, on the branch under the same policy as a
push. The interface is in types.py; the service in service.py; the pages in views.py."""
