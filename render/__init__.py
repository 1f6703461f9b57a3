"""What turns git content into HTML for the pages: diffs (parsed from git's output, highlighted,
rendered into rows), the file view's rows, documents (Markdown, reStructuredText, notebooks)
sanitized, and the image proxy's signed URLs.

A layer below repos (docs/architecture.md): it runs no git and reads no model. Callers in repos
read git through gitcore/git.py and hand the bytes or text in; what needs a task later (the rest
of a big file's highlighting) is asked for through a callback the caller passes. A plain
package, not a Django app: it has no models, templates, template tags or checks.
"""
