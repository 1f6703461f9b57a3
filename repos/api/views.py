"""REST API v1: the current user, tokens, repositories and members. Thin: services do the work."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from repos import lifecycle, pushlog, selectors, services, webhooks
from repos.api.access import repo_or_404, require_admin
from repos.api.permissions import Authenticated, TokenScope
from repos.api.serializers import (
    DeliverySerializer,
    MemberSerializer,
    MemberSetSerializer,
    NewTokenSerializer,
    NewWebhookSerializer,
    PushSerializer,
    RepositoryCreateSerializer,
    RepositorySerializer,
    RepositoryTransferSerializer,
    RepositoryUpdateSerializer,
    TokenCreateSerializer,
    TokenSerializer,
    UserSerializer,
    WebhookCreateSerializer,
    WebhookSerializer,
)
from repos.auth import AccessTokenAuthentication, PasswordBasicAuthentication
from repos.models import AccessToken, Role, Webhook
from repos.visibility import view_for

AUTHENTICATED = [Authenticated, TokenScope]


class CurrentUserView(APIView):
    permission_classes = AUTHENTICATED

    @extend_schema(responses=UserSerializer)
    def get(self, request):
        return Response(UserSerializer(request.user).data)


class UserDetailView(APIView):
    @extend_schema(responses=UserSerializer)
    def get(self, request, username: str):
        user = selectors.user_by_name(username)
        if user is None:
            raise NotFound("User not found.")
        return Response(UserSerializer(user).data)


class TokenListView(generics.GenericAPIView):
    # Account passwords are accepted here only, so a script can bootstrap its first token.
    authentication_classes = [
        PasswordBasicAuthentication,
        AccessTokenAuthentication,
        *APIView.authentication_classes[1:],
    ]
    permission_classes = AUTHENTICATED
    serializer_class = TokenSerializer

    def get_queryset(self):
        return AccessToken.objects.filter(user=self.request.user)

    @extend_schema(responses=TokenSerializer(many=True))
    def get(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(TokenSerializer(page, many=True).data)

    @extend_schema(request=TokenCreateSerializer, responses={201: NewTokenSerializer})
    def post(self, request):
        data = TokenCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token, secret = services.token_create(user=request.user, **data.validated_data)
        body = NewTokenSerializer(token).data
        body["token"] = secret
        return Response(body, status=status.HTTP_201_CREATED)


class TokenDetailView(APIView):
    permission_classes = AUTHENTICATED

    @extend_schema(responses=TokenSerializer)
    def get(self, request, token_id: int):
        token = get_object_or_404(AccessToken, pk=token_id, user=request.user)
        return Response(TokenSerializer(token).data)

    @extend_schema(responses={204: None})
    def delete(self, request, token_id: int):
        token = get_object_or_404(AccessToken, pk=token_id, user=request.user)
        services.token_revoke(token=token)
        return Response(status=status.HTTP_204_NO_CONTENT)


# List repositories, create an empty one. Routed by sources (sources/api/repositories.py), whose
# subclass also creates one by importing it. (No docstring: the schema would show it on the list.)
class RepositoryListView(generics.GenericAPIView):
    serializer_class = RepositorySerializer
    create_serializer_class = RepositoryCreateSerializer

    def get_queryset(self):
        qs = selectors.visible_repositories(self.request.user)
        if self.request.query_params.get("deleted") in ("1", "true") and self.request.user.is_staff:
            # Staff only: the deleted repositories awaiting purge (restorable).
            qs = selectors.deleted_repositories()
        owner = self.request.query_params.get("owner")
        if owner:
            qs = qs.filter(owner__username__iexact=owner)
        return qs.order_by("-created_at", "-id")

    @extend_schema(responses=RepositorySerializer(many=True))
    def get(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(request=RepositoryCreateSerializer, responses={201: RepositorySerializer})
    def post(self, request):
        """Create an empty repository (201)."""
        data = self.create_serializer_class(data=request.data)
        data.is_valid(raise_exception=True)
        return self.create(request, dict(data.validated_data))

    def create(self, request, fields: dict) -> Response:
        repo = services.repository_create(owner=request.user, **fields)
        return Response(self.get_serializer(repo).data, status=status.HTTP_201_CREATED)

    def get_permissions(self):
        if self.request.method == "POST":
            return [p() for p in AUTHENTICATED]
        return super().get_permissions()


class RepositoryDetailView(APIView):
    @extend_schema(responses=RepositorySerializer)
    def get(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        return Response(RepositorySerializer(repo, context={"request": request}).data)

    @extend_schema(request=RepositoryUpdateSerializer, responses=RepositorySerializer)
    def patch(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        require_admin(request, repo)
        data = RepositoryUpdateSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        repo = services.repository_update(repo=repo, actor=request.user, **data.validated_data)
        return Response(RepositorySerializer(repo, context={"request": request}).data)

    @extend_schema(responses={204: None})
    def delete(self, request, owner: str, name: str):
        """Soft delete: the repository answers 404 to everyone but staff, and is purged after
        REPOSITORY_DELETE_RETENTION_DAYS unless staff restore it."""
        repo = repo_or_404(request, owner, name)
        require_admin(request, repo)
        lifecycle.repository_soft_delete(repo=repo, acting_user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RepositoryRestoreView(APIView):
    permission_classes = AUTHENTICATED

    @extend_schema(request=None, responses=RepositorySerializer)
    def post(self, request, owner: str, name: str):
        if not request.user.is_staff:
            raise NotFound("Repository not found.")
        repo = repo_or_404(request, owner, name)
        repo = lifecycle.repository_restore(repo=repo, acting_user=request.user)
        return Response(RepositorySerializer(repo, context={"request": request}).data)


class RepositoryTransferView(APIView):
    permission_classes = AUTHENTICATED

    @extend_schema(request=RepositoryTransferSerializer, responses=RepositorySerializer)
    def post(self, request, owner: str, name: str):
        """Rename (`name`) and/or transfer (`owner`: yourself, or anyone for staff)."""
        repo = repo_or_404(request, owner, name)
        if not request.user.is_staff:
            require_admin(request, repo)
        data = RepositoryTransferSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        new_owner = None
        if data.validated_data.get("owner"):
            new_owner = selectors.user_by_name(data.validated_data["owner"])
            if new_owner is None:
                raise NotFound("User not found.")
        repo = lifecycle.repository_move(
            repo=repo,
            acting_user=request.user,
            new_owner=new_owner,
            new_name=data.validated_data.get("name") or None,
        )
        return Response(RepositorySerializer(repo, context={"request": request}).data)


class MemberListView(APIView):
    @extend_schema(responses=MemberSerializer(many=True))
    def get(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        rows = [{"username": u.username, "role": r.label} for u, r in selectors.members(repo)]
        return Response(MemberSerializer(rows, many=True).data)


class MemberDetailView(APIView):
    permission_classes = AUTHENTICATED

    def _target(self, request, owner, name, username):
        repo = repo_or_404(request, owner, name)
        require_admin(request, repo)
        user = selectors.user_by_name(username)
        if user is None:
            raise NotFound("User not found.")
        return repo, user

    @extend_schema(request=MemberSetSerializer, responses=MemberSerializer)
    def put(self, request, owner: str, name: str, username: str):
        repo, user = self._target(request, owner, name, username)
        data = MemberSetSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        role = Role.from_label(data.validated_data["role"])
        services.membership_set(repo=repo, user=user, role=role, actor=request.user)
        return Response({"username": user.username, "role": role.label})

    @extend_schema(responses={204: None})
    def delete(self, request, owner: str, name: str, username: str):
        repo, user = self._target(request, owner, name, username)
        if user.pk == repo.owner_id:
            raise PermissionDenied("The owner cannot be removed from their repository.")
        services.membership_remove(repo=repo, user=user, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookListView(generics.GenericAPIView):
    permission_classes = AUTHENTICATED
    serializer_class = WebhookSerializer

    @extend_schema(responses=WebhookSerializer(many=True))
    def get(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        require_admin(request, repo)
        page = self.paginate_queryset(Webhook.objects.filter(repository=repo))
        return self.get_paginated_response(WebhookSerializer(page, many=True).data)

    @extend_schema(request=WebhookCreateSerializer, responses={201: NewWebhookSerializer})
    def post(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        require_admin(request, repo)
        data = WebhookCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        hook = webhooks.webhook_create(repo=repo, created_by=request.user, **data.validated_data)
        body = NewWebhookSerializer(hook).data
        body["secret"] = hook.secret
        return Response(body, status=status.HTTP_201_CREATED)


class WebhookDetailView(APIView):
    permission_classes = AUTHENTICATED

    def _hook(self, request, owner, name, hook_id):
        repo = repo_or_404(request, owner, name)
        require_admin(request, repo)
        return get_object_or_404(Webhook, pk=hook_id, repository=repo)

    @extend_schema(responses=WebhookSerializer)
    def get(self, request, owner: str, name: str, hook_id: int):
        return Response(WebhookSerializer(self._hook(request, owner, name, hook_id)).data)

    @extend_schema(responses={204: None})
    def delete(self, request, owner: str, name: str, hook_id: int):
        self._hook(request, owner, name, hook_id).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookDeliveriesView(generics.GenericAPIView):
    permission_classes = AUTHENTICATED
    serializer_class = DeliverySerializer

    @extend_schema(responses=DeliverySerializer(many=True))
    def get(self, request, owner: str, name: str, hook_id: int):
        repo = repo_or_404(request, owner, name)
        require_admin(request, repo)
        hook = get_object_or_404(Webhook, pk=hook_id, repository=repo)
        page = self.paginate_queryset(hook.deliveries.all())
        return self.get_paginated_response(DeliverySerializer(page, many=True).data)


class PushListView(generics.GenericAPIView):
    serializer_class = PushSerializer

    @extend_schema(responses=PushSerializer(many=True))
    def get(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        shown = pushlog.PushFilter(repo, view_for(repo, request.user))
        qs = (
            shown.visible(pushlog.logged_pushes(repo))
            .order_by("-pk")
            .prefetch_related("ref_updates", "commits")
        )
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(
            [_shown_push(shown, row) for row in PushSerializer(page, many=True).data]
        )


class PushDetailView(APIView):
    @extend_schema(responses=PushSerializer)
    def get(self, request, owner: str, name: str, push_id: int):
        repo = repo_or_404(request, owner, name)
        shown = pushlog.PushFilter(repo, view_for(repo, request.user))
        # A push with nothing the viewer may see answers as one that was never recorded.
        push = get_object_or_404(
            shown.visible(pushlog.logged_pushes(repo).prefetch_related("ref_updates", "commits")),
            pk=push_id,
        )
        return Response(_shown_push(shown, PushSerializer(push).data))


def _shown_push(shown, data: dict) -> dict:
    """A serialized push without the refs and commits the viewer may not see (repos.pushlog)."""
    return {**data, "refs": shown.refs(data["refs"]), "commits": shown.shas(data["commits"])}
