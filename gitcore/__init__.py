"""The git plumbing: the one git runner (git.py) and the toolbox beside it (gittools.py), and
the modules that speak git's formats and protocols on top of them.

A layer below repos (docs/architecture.md): it runs git and reads what git writes, and knows
nothing of the platform's models, services, views or access rules. What a caller in an app
knows (the hideRefs of a request, a refusal's explanation) is passed in. A plain package, not
a Django app: it has no models, templates, template tags or checks; settings come through
django.conf.
"""
