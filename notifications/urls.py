from django.urls import path

from notifications import settings_views, subscription_views, views

urlpatterns = [
    path("notifications", views.notification_list, name="notifications"),
    path("notifications/<int:pk>/read", views.notification_read, name="notification-read"),
    path("notifications/read-all", views.notification_read_all, name="notifications-read-all"),
    path(
        "notifications/subscription", subscription_views.subscription_update, name="notification-subscription"
    ),
    path(
        "notifications/unsubscribe/<str:token>",
        subscription_views.unsubscribe,
        name="notifications-unsubscribe",
    ),
    path("settings/notifications", settings_views.notification_settings, name="notification-settings"),
]
