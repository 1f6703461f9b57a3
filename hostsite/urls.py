from django.urls import include, path

urlpatterns = [
    path("api/v1/", include("repos.api.urls")),
    path("", include("repos.urls")),
]
