"""(being written)"""

from __future__ import annotations

# Routes of this page family; repos/urls.py splices them in.
urlpatterns: list = []
