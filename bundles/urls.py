from django.urls import path, re_path

from bundles import views

urlpatterns = [
    re_path(r"^(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/bundle-list$", views.bundle_list, name="bundle-list"),
    path("bundles/<str:key>", views.bundle_object, name="bundle-object"),
]
