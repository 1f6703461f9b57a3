"""(being written)"""

from __future__ import annotations

# Routes of this API family; repos/api/urls.py splices them in.
urlpatterns: list = []
