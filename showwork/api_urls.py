from django.urls import path

from showwork import api

urlpatterns = [
    path("repos/<str:owner>/<str:name>/work", api.WorkView.as_view(), name="api-work"),
]
