from rest_framework import serializers

from repos.models import (
    AccessToken,
    Repository,
    Role,
    TokenScope,
    User,
    Visibility,
    Webhook,
    WebhookDelivery,
)


class UserSerializer(serializers.ModelSerializer):
    class Meta:
        model = User
        fields = ["id", "username", "display_name", "bio", "date_joined"]
        read_only_fields = fields


class TokenSerializer(serializers.ModelSerializer):
    class Meta:
        model = AccessToken
        fields = ["id", "name", "scope", "prefix", "created_at", "last_used_at", "expires_at", "revoked_at"]
        read_only_fields = fields


class TokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False, allow_blank=True)
    scope = serializers.ChoiceField(choices=TokenScope.choices, default=TokenScope.READ)
    expires_at = serializers.DateTimeField(required=False, allow_null=True)


class NewTokenSerializer(TokenSerializer):
    token = serializers.CharField(read_only=True, help_text="The secret. Shown only in this response.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]
        read_only_fields = fields


class RepositorySerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    full_name = serializers.CharField(read_only=True)
    clone_url = serializers.SerializerMethodField()
    html_url = serializers.SerializerMethodField()

    class Meta:
        model = Repository
        fields = [
            "id",
            "owner",
            "name",
            "full_name",
            "description",
            "visibility",
            "default_branch",
            "created_at",
            "updated_at",
            "clone_url",
            "html_url",
            "deleted_at",
        ]
        read_only_fields = fields

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def get_clone_url(self, obj) -> str:
        return self._absolute(f"/{obj.owner.username}/{obj.name}.git")

    def get_html_url(self, obj) -> str:
        return self._absolute(f"/{obj.owner.username}/{obj.name}")


class RepositoryTransferSerializer(serializers.Serializer):
    owner = serializers.CharField(
        max_length=39, required=False, help_text="The new owner: yourself, or anyone for staff."
    )
    name = serializers.CharField(max_length=100, required=False, help_text="The new name.")


class RepositoryCreateSerializer(serializers.Serializer):
    # Names are validated by the service, so the API, the web form and the CLI agree.
    name = serializers.CharField(max_length=300, trim_whitespace=False)
    description = serializers.CharField(max_length=350, required=False, allow_blank=True, default="")
    visibility = serializers.ChoiceField(choices=Visibility.choices, default=Visibility.PUBLIC)
    default_branch = serializers.CharField(max_length=255, required=False)


class RepositoryUpdateSerializer(serializers.Serializer):
    description = serializers.CharField(max_length=350, required=False, allow_blank=True)
    visibility = serializers.ChoiceField(choices=Visibility.choices, required=False)
    default_branch = serializers.CharField(max_length=255, required=False)


class MemberSerializer(serializers.Serializer):
    username = serializers.CharField(read_only=True)
    role = serializers.ChoiceField(choices=[r.label for r in Role], read_only=True)


class MemberSetSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=[r.label for r in Role])


class WebhookSerializer(serializers.ModelSerializer):
    class Meta:
        model = Webhook
        fields = ["id", "url", "active", "include_workspaces", "created_at"]
        read_only_fields = fields


class WebhookCreateSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=2000)
    secret = serializers.CharField(max_length=200, required=False, allow_blank=True)
    include_workspaces = serializers.BooleanField(default=True)


class NewWebhookSerializer(WebhookSerializer):
    secret = serializers.CharField(read_only=True, help_text="Signs deliveries. Shown only in this response.")

    class Meta(WebhookSerializer.Meta):
        fields = [*WebhookSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class DeliverySerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "push",
            "event",
            "status",
            "attempts",
            "response_status",
            "response_excerpt",
            "error",
            "duration_ms",
            "created_at",
            "last_attempt_at",
            "delivered_at",
        ]
        read_only_fields = fields


class RefUpdateSerializer(serializers.Serializer):
    ref = serializers.CharField()
    old = serializers.CharField()
    new = serializers.CharField()
    forced = serializers.BooleanField(help_text="Not a fast-forward: the ref was rewritten.")


class PushSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    user = serializers.CharField(source="pusher_name")
    date = serializers.DateTimeField(source="created_at")
    workspace = serializers.BooleanField(source="touches_workspace")
    # The push's number in the repository's replication log (repos.changelog).
    generation = serializers.IntegerField(read_only=True)
    refs = serializers.SerializerMethodField()
    commits = serializers.SerializerMethodField()

    def get_refs(self, obj) -> list[dict]:
        return RefUpdateSerializer(obj.ref_updates.all(), many=True).data  # type: ignore[return-value]  # many=True: a list

    def get_commits(self, obj) -> list[str]:
        return [c.sha for c in obj.commits.all()]
