from sources.views import imports, mirrors, new

# Top-level paths here must stay in repos.names.RESERVED_NAMES, so no user can take them.
urlpatterns = [
    *new.urlpatterns,
    *imports.urlpatterns,
    *mirrors.urlpatterns,
]
