from django.urls import path

from showwork import dashboard, views

_R = "<str:owner>/<str:name>"

urlpatterns = [
    path("dashboard", dashboard.dashboard, name="dashboard"),
    path("dashboard/stale-refs/cleanup", dashboard.stale_cleanup, name="dashboard-stale-cleanup"),
    path(f"{_R}/work", views.work, name="work"),
    path(f"{_R}/work.txt", views.work_text, name="work-text"),
    path(f"{_R}/work/stack/<path:ref>", views.stack, name="work-stack"),
    path(f"{_R}/c/<str:prefix>", views.short_hash, name="short-hash"),
]
