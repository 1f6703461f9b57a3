from django.urls import path

from notifications import api

urlpatterns = [
    path("notifications", api.NotificationListView.as_view(), name="api-notifications"),
    path("notifications/<int:pk>/read", api.NotificationReadView.as_view(), name="api-notification-read"),
]
