"""A search's results as a sequence Django's Paginator and DRF's pagination can page through:
the count and each page are asked of the engine only when needed."""

from __future__ import annotations

from functools import cached_property

from search import backend
from search.query import Query


class Results:
    def __init__(self, kind: str, query: Query, user):
        self.kind, self.query, self.user = kind, query, user

    @cached_property
    def total(self) -> int:
        return backend.count(self.kind, self.query, self.user)

    def count(self) -> int:
        return self.total

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, index):
        if not isinstance(index, slice):
            raise TypeError("search results are read a page at a time")
        start = index.start or 0
        stop = self.total if index.stop is None else index.stop
        return backend.find(self.kind, self.query, self.user, start, max(0, stop - start))
