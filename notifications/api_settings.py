"""REST API: the signed-in user's notification preferences and subscriptions."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from notifications import selectors, services, subjects
from notifications.kinds import KINDS
from notifications.models import Delivery
from repos.api.permissions import Authenticated, TokenScope
from repos.errors import InvalidInput


class PreferenceSerializer(serializers.Serializer):
    kind = serializers.CharField()
    title = serializers.CharField(help_text="what the kind is, as the settings page says it")
    delivery = serializers.ChoiceField(choices=Delivery.choices)
    default = serializers.ChoiceField(choices=Delivery.choices)


class SubscriptionSerializer(serializers.Serializer):
    subject = serializers.CharField(help_text='"proposal:<id>" or "repository:<id>"')
    subscribed = serializers.BooleanField(help_text="true: follows; false: muted")


def _preferences(user) -> list[dict]:
    current = selectors.deliveries_for(user)
    return [
        {"kind": k.name, "title": k.label, "delivery": current[k.name], "default": k.default} for k in KINDS
    ]


class PreferencesView(APIView):
    permission_classes = [Authenticated, TokenScope]

    @extend_schema(operation_id="notification_preferences", responses=PreferenceSerializer(many=True))
    def get(self, request):
        return Response(PreferenceSerializer(_preferences(request.user), many=True).data)

    @extend_schema(
        operation_id="notification_preferences_update",
        request=inline_serializer(
            "PreferencesUpdate",
            {k.name: serializers.ChoiceField(Delivery.choices, required=False) for k in KINDS},
        ),
        responses=PreferenceSerializer(many=True),
        description="An object of kind -> web | email | digest; kinds left out keep their setting.",
    )
    def patch(self, request):
        if not isinstance(request.data, dict) or not all(isinstance(v, str) for v in request.data.values()):
            raise InvalidInput("Send an object of kind -> web, email or digest.")
        services.preferences_set(user=request.user, choices=dict(request.data))
        return Response(PreferenceSerializer(_preferences(request.user), many=True).data)


class SubscriptionsView(APIView):
    permission_classes = [Authenticated, TokenScope]

    @extend_schema(operation_id="notification_subscriptions", responses=SubscriptionSerializer(many=True))
    def get(self, request):
        rows = selectors.subscriptions_of(request.user)
        return Response(SubscriptionSerializer(rows, many=True).data)

    @extend_schema(
        operation_id="notification_subscription_set",
        request=SubscriptionSerializer,
        responses=SubscriptionSerializer,
        description="Follow (subscribed: true) or mute (false) a proposal or repository you may see; 404 otherwise.",
    )
    def post(self, request):
        data = SubscriptionSerializer(data=request.data)
        if not data.is_valid():
            raise InvalidInput("Send subject and subscribed.", fields=data.errors)
        info = subjects.resolve(data.validated_data["subject"], request.user)
        if info is None:
            raise NotFound("No such proposal or repository.")
        row = services.subscription_set(
            user=request.user, subject=info.subject, subscribed=data.validated_data["subscribed"]
        )
        return Response(SubscriptionSerializer(row).data)
