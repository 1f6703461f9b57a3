"""ASGI entry point, for completeness.

Production runs the WSGI app under gunicorn (see README): Django's ASGI handler reads a whole
request body before calling the view, which a multi-GB git push must not wait for.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hostsite.settings")

application = get_asgi_application()
