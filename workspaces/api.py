"""REST API for workspaces, their refs, branch protection and workspace settings."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from repos import selectors as repo_selectors
from repos.api.permissions import Authenticated, TokenScope
from repos.models import Role
from workspaces import browse, selectors, services
from workspaces.models import ProtectedBranch, Workspace, WorkspaceState

INVISIBLE = (WorkspaceState.HIDDEN, WorkspaceState.TAKEN_DOWN)


class WorkspaceSerializer(serializers.Serializer):
    username = serializers.CharField()
    refs = serializers.IntegerField()
    last_commit = serializers.DateTimeField(allow_null=True)
    last_push = serializers.DateTimeField(allow_null=True)
    state = serializers.CharField()


class RefSerializer(serializers.Serializer):
    ref = serializers.CharField()
    name = serializers.CharField()
    sha = serializers.CharField()
    subject = serializers.CharField()
    committed = serializers.DateTimeField()
    ahead = serializers.IntegerField(allow_null=True)
    behind = serializers.IntegerField(allow_null=True)


class WorkspaceDetailSerializer(serializers.Serializer):
    username = serializers.CharField()
    state = serializers.CharField()
    refs = RefSerializer(many=True)


class ProtectedBranchSerializer(serializers.ModelSerializer):
    class Meta:
        model = ProtectedBranch
        fields = ["name", "allow_force", "created_at"]
        read_only_fields = ["name", "created_at"]


class WorkspaceSettingsSerializer(serializers.Serializer):
    maintainers_may_edit = serializers.BooleanField(required=False)
    ref_limit = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=1_000_000)


def _repo(request, owner, name):
    repo = repo_selectors.readable_repository(request.user, owner, name)
    if repo is None:
        raise NotFound("Repository not found.")
    return repo


def _admin(request, repo):
    if not repo_selectors.can_admin(request.user, repo):
        raise PermissionDenied("Only the repository's admins may do this.")


def _sees_hidden(request, repo, username):
    user = request.user
    return (user.is_authenticated and (user.username == username or user.is_staff)) or \
        repo_selectors.role_for(user, repo) == Role.ADMIN


class WorkspaceListView(APIView):
    @extend_schema(responses=WorkspaceSerializer(many=True))
    def get(self, request, owner: str, name: str):
        repo = _repo(request, owner, name)
        rows = {w.user.username: w for w in Workspace.objects.filter(repository=repo).select_related("user")}
        out = []
        for username, info in sorted(browse.workspace_summary(repo).items()):
            row = rows.get(username)
            state = row.state if row else WorkspaceState.ACTIVE
            if state in INVISIBLE and not _sees_hidden(request, repo, username):
                continue
            out.append({"username": username, "refs": info["refs"], "last_commit": info["last_commit"],
                        "last_push": row.last_push_at if row else None, "state": state})
        return Response(WorkspaceSerializer(out, many=True).data)


class WorkspaceDetailView(APIView):
    @extend_schema(responses=WorkspaceDetailSerializer)
    def get(self, request, owner: str, name: str, username: str):
        repo = _repo(request, owner, name)
        row = Workspace.objects.filter(repository=repo, user__username=username).first()
        state = row.state if row else WorkspaceState.ACTIVE
        if state in INVISIBLE and not _sees_hidden(request, repo, username):
            raise NotFound("Workspace not found.")
        refs = browse.user_refs(repo, username)
        if not refs and row is None:
            raise NotFound("Workspace not found.")
        data = {"username": username, "state": state, "refs": [r.__dict__ for r in refs]}
        return Response(WorkspaceDetailSerializer(data).data)


class ProtectedBranchListView(APIView):
    @extend_schema(responses=ProtectedBranchSerializer(many=True))
    def get(self, request, owner: str, name: str):
        repo = _repo(request, owner, name)
        return Response(ProtectedBranchSerializer(ProtectedBranch.objects.filter(repository=repo), many=True).data)


class ProtectedBranchDetailView(APIView):
    permission_classes = [Authenticated, TokenScope]

    @extend_schema(request=ProtectedBranchSerializer, responses=ProtectedBranchSerializer)
    def put(self, request, owner: str, name: str, branch: str):
        repo = _repo(request, owner, name)
        _admin(request, repo)
        data = ProtectedBranchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        protected = services.protected_branch_set(repo=repo, name=branch,
                                                  allow_force=data.validated_data.get("allow_force", False))
        return Response(ProtectedBranchSerializer(protected).data)

    @extend_schema(responses={204: None})
    def delete(self, request, owner: str, name: str, branch: str):
        repo = _repo(request, owner, name)
        _admin(request, repo)
        if not services.protected_branch_remove(repo=repo, name=branch):
            raise NotFound("That branch is not protected.")
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkspaceSettingsView(APIView):
    permission_classes = [Authenticated, TokenScope]

    @extend_schema(responses=WorkspaceSettingsSerializer)
    def get(self, request, owner: str, name: str):
        repo = _repo(request, owner, name)
        ws = selectors.workspace_settings(repo)
        return Response({"maintainers_may_edit": ws.maintainers_may_edit, "ref_limit": ws.ref_limit})

    @extend_schema(request=WorkspaceSettingsSerializer, responses=WorkspaceSettingsSerializer)
    def patch(self, request, owner: str, name: str):
        repo = _repo(request, owner, name)
        _admin(request, repo)
        data = WorkspaceSettingsSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        ws = services.workspace_settings_update(
            repo=repo, maintainers_may_edit=values.get("maintainers_may_edit"),
            ref_limit=values.get("ref_limit"), clear_ref_limit="ref_limit" in values and values["ref_limit"] is None,
        )
        return Response({"maintainers_may_edit": ws.maintainers_may_edit, "ref_limit": ws.ref_limit})
