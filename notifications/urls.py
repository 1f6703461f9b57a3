from django.urls import path

from notifications import views

urlpatterns = [
    path("notifications", views.notification_list, name="notifications"),
    path("notifications/<int:pk>/read", views.notification_read, name="notification-read"),
    path("notifications/read-all", views.notification_read_all, name="notifications-read-all"),
]
