"""REST API: your SSH keys (/api/v1/user/keys) and a repository's deploy keys
(/api/v1/repos/<owner>/<name>/keys). Thin, as repos.api.views: sshgit.services does the work and
its errors become the API's one error format (repos.api.errors)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from repos.api.access import repo_or_404
from repos.api.permissions import Authenticated, TokenScope
from sshgit import selectors, services
from sshgit.keyparse import MAX_TEXT
from sshgit.models import PublicKey

AUTHENTICATED = [Authenticated, TokenScope]


class KeySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    key_type = serializers.CharField()
    key = serializers.SerializerMethodField()
    fingerprint = serializers.CharField()
    bits = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)

    def get_key(self, key: PublicKey) -> str:
        return f"{key.key_type} {key.key_data}"


class DeployKeySerializer(KeySerializer):
    read_write = serializers.BooleanField()
    created_by = serializers.SerializerMethodField()

    def get_created_by(self, key: PublicKey) -> str | None:
        return key.created_by.username if key.created_by is not None else None


class KeyCreateSerializer(serializers.Serializer):
    title = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=services.TITLE_MAX,
        help_text="Blank or absent: the key's comment.",
    )
    key = serializers.CharField(
        max_length=MAX_TEXT, trim_whitespace=False, help_text="One OpenSSH public key line (a .pub file)."
    )


class DeployKeyCreateSerializer(KeyCreateSerializer):
    read_write = serializers.BooleanField(default=False, help_text="True: the key may push.")


class KeyListView(generics.GenericAPIView):
    permission_classes = AUTHENTICATED
    serializer_class = KeySerializer

    @extend_schema(responses=KeySerializer(many=True))
    def get(self, request):
        page = self.paginate_queryset(selectors.keys_of(request.user))
        return self.get_paginated_response(KeySerializer(page, many=True).data)

    @extend_schema(request=KeyCreateSerializer, responses={201: KeySerializer})
    def post(self, request):
        data = KeyCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        key = services.add_user_key(
            request.user, title=data.validated_data["title"], text=data.validated_data["key"]
        )
        return Response(KeySerializer(key).data, status=status.HTTP_201_CREATED)


class KeyDetailView(APIView):
    permission_classes = AUTHENTICATED

    def _key(self, request, key_id: int) -> PublicKey:
        key = selectors.keys_of(request.user).filter(pk=key_id).first()
        if key is None:
            raise NotFound("Key not found.")
        return key

    @extend_schema(responses=KeySerializer)
    def get(self, request, key_id: int):
        return Response(KeySerializer(self._key(request, key_id)).data)

    @extend_schema(responses={204: None})
    def delete(self, request, key_id: int):
        services.remove_user_key(request.user, self._key(request, key_id).pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _manageable_repo(request, owner: str, name: str):
    # Outsiders of a private repository get its 404; those who may read it but not manage its
    # deploy keys get 403, as the other admin-only repository routes answer (require_admin).
    repo = repo_or_404(request, owner, name)
    if not services.can_manage_deploy_keys(request.user, repo):
        raise PermissionDenied("Only the repository's admins may manage its deploy keys.")
    return repo


class DeployKeyListView(generics.GenericAPIView):
    permission_classes = AUTHENTICATED
    serializer_class = DeployKeySerializer

    @extend_schema(responses=DeployKeySerializer(many=True))
    def get(self, request, owner: str, name: str):
        repo = _manageable_repo(request, owner, name)
        page = self.paginate_queryset(selectors.deploy_keys_of(repo))
        return self.get_paginated_response(DeployKeySerializer(page, many=True).data)

    @extend_schema(request=DeployKeyCreateSerializer, responses={201: DeployKeySerializer})
    def post(self, request, owner: str, name: str):
        repo = _manageable_repo(request, owner, name)
        data = DeployKeyCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        key = services.add_deploy_key(
            repo,
            acting_user=request.user,
            title=data.validated_data["title"],
            text=data.validated_data["key"],
            read_write=data.validated_data["read_write"],
        )
        return Response(DeployKeySerializer(key).data, status=status.HTTP_201_CREATED)


class DeployKeyDetailView(APIView):
    permission_classes = AUTHENTICATED

    def _key(self, request, owner: str, name: str, key_id: int) -> tuple:
        repo = _manageable_repo(request, owner, name)
        key = selectors.deploy_keys_of(repo).filter(pk=key_id).first()
        if key is None:
            raise NotFound("Deploy key not found.")
        return repo, key

    @extend_schema(responses=DeployKeySerializer)
    def get(self, request, owner: str, name: str, key_id: int):
        return Response(DeployKeySerializer(self._key(request, owner, name, key_id)[1]).data)

    @extend_schema(responses={204: None})
    def delete(self, request, owner: str, name: str, key_id: int):
        repo, key = self._key(request, owner, name, key_id)
        services.remove_deploy_key(repo, acting_user=request.user, key_id=key.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)
