from django.urls import path

from search import api

urlpatterns = [
    path("search/code", api.CodeSearchView.as_view(), name="api-search-code"),
    path("search/repositories", api.RepositorySearchView.as_view(), name="api-search-repositories"),
    path("search/commits", api.CommitSearchView.as_view(), name="api-search-commits"),
    path("search/proposals", api.ProposalSearchView.as_view(), name="api-search-proposals"),
]
