from django.urls import path, re_path

from bundles import pages, views

urlpatterns = [
    re_path(
        r"^(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/bundle-list$", views.bundle_list, name="bundle-list"
    ),
    # <area>/<sha256>.bundle; keys from before areas existed have no area (bundles.storage).
    path("bundles/<path:key>", views.bundle_object, name="bundle-object"),
    path("<str:owner>/<str:name>/bundles", pages.bundles_page, name="bundles-page"),
    path("<str:owner>/<str:name>/bundles/build", pages.build_now, name="bundles-build"),
]
