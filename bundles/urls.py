from django.urls import path, re_path

from bundles import pages, views

urlpatterns = [
    re_path(r"^(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/bundle-list$", views.bundle_list, name="bundle-list"),
    path("bundles/<str:key>", views.bundle_object, name="bundle-object"),
    path("<str:owner>/<str:name>/bundles", pages.bundles_page, name="bundles-page"),
    path("<str:owner>/<str:name>/bundles/build", pages.build_now, name="bundles-build"),
]
