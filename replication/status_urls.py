from django.urls import path

from replication import views

urlpatterns = [
    path("status", views.status_page, name="replication-status"),
    path("status.json", views.status_json, name="replication-status-json"),
]
