from sources.api import imports, mirrors, repositories

urlpatterns = [
    *repositories.urlpatterns,
    *imports.urlpatterns,
    *mirrors.urlpatterns,
]
