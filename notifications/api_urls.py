from django.urls import path

from notifications import api, api_settings

urlpatterns = [
    path("notifications", api.NotificationListView.as_view(), name="api-notifications"),
    path("notifications/<int:pk>/read", api.NotificationReadView.as_view(), name="api-notification-read"),
    path(
        "notifications/preferences",
        api_settings.PreferencesView.as_view(),
        name="api-notification-preferences",
    ),
    path(
        "notifications/subscriptions",
        api_settings.SubscriptionsView.as_view(),
        name="api-notification-subscriptions",
    ),
]
