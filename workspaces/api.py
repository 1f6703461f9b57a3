"""REST API for workspaces, their refs, branch protection and workspace settings."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from repos.api.access import repo_or_404, require_admin
from repos.api.pagination import Pagination
from repos.api.permissions import Authenticated, TokenScope
from repos.models.statuses import CONTEXT_MAX
from workspaces import browse, selectors, services
from workspaces.models import ArchivedRef, ProtectedBranch, Workspace


class FlagsSerializer(serializers.Serializer):
    frozen = serializers.BooleanField(help_text="A moderator froze it: its owner may not push or add to it.")
    hidden = serializers.BooleanField(help_text="Shown only to its owner, repository admins and staff.")
    taken_down = serializers.BooleanField(help_text="Its refs are out of reach; it accepts nothing.")
    state = serializers.CharField(
        help_text="The most restrictive flag set (taken_down, hidden, frozen) or "
        "active; read the flags, which combine."
    )


class WorkspaceSerializer(FlagsSerializer):
    username = serializers.CharField()
    refs = serializers.IntegerField()
    last_commit = serializers.DateTimeField(allow_null=True)
    last_push = serializers.DateTimeField(allow_null=True)


class RefSerializer(serializers.Serializer):
    ref = serializers.CharField()
    name = serializers.CharField()
    sha = serializers.CharField()
    subject = serializers.CharField()
    committed = serializers.DateTimeField()
    ahead = serializers.IntegerField(allow_null=True)
    behind = serializers.IntegerField(allow_null=True)


class WorkspaceDetailSerializer(FlagsSerializer):
    username = serializers.CharField()
    ref_count = serializers.IntegerField(
        help_text="All refs in the workspace; `refs` holds one page of them."
    )
    next = serializers.CharField(allow_null=True, help_text="URL of the next page of refs, if any.")
    refs = RefSerializer(many=True, help_text="Newest commit first; `?page=` and `?per_page=` (at most 100).")


class ProtectedBranchSerializer(serializers.ModelSerializer):
    required_approvals = serializers.IntegerField(
        required=False, min_value=0, max_value=services.MAX_REQUIRED_APPROVALS, default=0
    )
    required_checks = serializers.ListField(
        child=serializers.CharField(max_length=CONTEXT_MAX),
        required=False,
        default=list,
        max_length=services.MAX_REQUIRED_CHECKS,
        help_text="Status contexts that must be `success` on a proposal's head before it merges.",
    )

    class Meta:
        model = ProtectedBranch
        fields = [
            "name",
            "allow_force",
            "required_approvals",
            "require_code_owners",
            "required_checks",
            "created_at",
        ]
        read_only_fields = ["name", "created_at"]


class WorkspaceSettingsSerializer(serializers.Serializer):
    maintainers_may_edit = serializers.BooleanField(required=False)
    delete_merged_refs = serializers.BooleanField(required=False)
    branch_pushes_to_workspace = serializers.BooleanField(required=False)
    ref_limit = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=1_000_000)
    # Tag name patterns (fnmatch: v*, release-?): matching tags are never moved, only admins
    # delete them.
    protected_tags = serializers.ListField(child=serializers.CharField(max_length=255), required=False)


class WorkspaceListView(APIView):
    @extend_schema(responses=WorkspaceSerializer(many=True))
    def get(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        entries = sorted(selectors.visible_workspaces(request.user, repo), key=lambda e: e["username"])
        return Response(WorkspaceSerializer(entries, many=True).data)


class WorkspaceDetailView(APIView):
    @extend_schema(responses=WorkspaceDetailSerializer)
    def get(self, request, owner: str, name: str, username: str):
        repo = repo_or_404(request, owner, name)
        if not selectors.visible_to(request.user, repo, username):
            raise NotFound("Workspace not found.")
        # A taken-down workspace shows its owner and the admins its flags only.
        refs = (
            browse.user_refs(repo, username)
            if selectors.content_visible(request.user, repo, username)
            else []
        )
        flags = selectors.workspace_flags(repo, username)
        if not refs and not Workspace.objects.filter(repository=repo, user__username=username).exists():
            raise NotFound("Workspace not found.")
        # ahead/behind costs a git process per ref (up to 1000 a user): one page at a time.
        paginator = Pagination()
        page = paginator.paginate_queryset(refs, request, view=self)
        data = {
            "username": username,
            **flags,
            "state": selectors.state_of(flags),
            "ref_count": len(refs),
            "next": paginator.get_next_link(),
            "refs": [r.__dict__ for r in browse.with_counts(repo, page or [])],
        }
        return Response(WorkspaceDetailSerializer(data).data)


class ProtectedBranchListView(APIView):
    @extend_schema(responses=ProtectedBranchSerializer(many=True))
    def get(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        return Response(
            ProtectedBranchSerializer(ProtectedBranch.objects.filter(repository=repo), many=True).data
        )


class ProtectedBranchDetailView(APIView):
    permission_classes = [Authenticated, TokenScope]

    @extend_schema(request=ProtectedBranchSerializer, responses=ProtectedBranchSerializer)
    def put(self, request, owner: str, name: str, branch: str):
        repo = repo_or_404(request, owner, name)
        require_admin(request, repo)
        data = ProtectedBranchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        protected = services.protected_branch_set(
            repo=repo,
            name=branch,
            allow_force=values.get("allow_force", False),
            required_approvals=values.get("required_approvals", 0),
            require_code_owners=values.get("require_code_owners", False),
            required_checks=values.get("required_checks", []),
        )
        return Response(ProtectedBranchSerializer(protected).data)

    @extend_schema(responses={204: None})
    def delete(self, request, owner: str, name: str, branch: str):
        repo = repo_or_404(request, owner, name)
        require_admin(request, repo)
        if not services.protected_branch_remove(repo=repo, name=branch):
            raise NotFound("That branch is not protected.")
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkspaceSettingsView(APIView):
    permission_classes = [Authenticated, TokenScope]

    @extend_schema(responses=WorkspaceSettingsSerializer)
    def get(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        ws = selectors.workspace_settings(repo)
        return Response(_settings_data(ws))

    @extend_schema(request=WorkspaceSettingsSerializer, responses=WorkspaceSettingsSerializer)
    def patch(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        require_admin(request, repo)
        data = WorkspaceSettingsSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        ws = services.workspace_settings_update(
            repo=repo,
            maintainers_may_edit=values.get("maintainers_may_edit"),
            ref_limit=values.get("ref_limit"),
            clear_ref_limit="ref_limit" in values and values["ref_limit"] is None,
            delete_merged_refs=values.get("delete_merged_refs"),
            branch_pushes_to_workspace=values.get("branch_pushes_to_workspace"),
            protected_tags=values.get("protected_tags"),
        )
        return Response(_settings_data(ws))


def _settings_data(ws) -> dict:
    return {
        "maintainers_may_edit": ws.maintainers_may_edit,
        "ref_limit": ws.ref_limit,
        "delete_merged_refs": ws.delete_merged_refs,
        "branch_pushes_to_workspace": ws.branch_pushes_to_workspace,
        "protected_tags": list(ws.tag_patterns()),
    }


class ArchivedRefSerializer(serializers.ModelSerializer):
    class Meta:
        model = ArchivedRef
        fields = [
            "id",
            "ref",
            "sha",
            "branch",
            "how",
            "reason",
            "push",
            "created_at",
            "expires_at",
            "state",
            "restored_at",
        ]


class RestoreSerializer(serializers.Serializer):
    name = serializers.CharField(
        required=False,
        max_length=255,
        help_text="Restore under this name in the same workspace (default: the old one).",
    )


class ArchivedRefListView(APIView):
    @extend_schema(responses=ArchivedRefSerializer(many=True))
    def get(self, request, owner: str, name: str, username: str):
        """Workspace refs cleanup deleted because their work landed; restorable until they expire."""
        repo = repo_or_404(request, owner, name)
        if not selectors.visible_to(request.user, repo, username):
            raise NotFound("Workspace not found.")
        rows = ArchivedRef.objects.filter(repository=repo, username=username)[:200]
        if not selectors.content_visible(request.user, repo, username):
            rows = ArchivedRef.objects.none()  # taken down: its refs and ids are for staff only
        return Response(ArchivedRefSerializer(rows, many=True).data)


class ArchivedRefRestoreView(APIView):
    permission_classes = [Authenticated, TokenScope]

    @extend_schema(
        request=RestoreSerializer,
        responses={
            200: inline_serializer(
                "Restored", {"ref": serializers.CharField(), "sha": serializers.CharField()}
            )
        },
    )
    def post(self, request, owner: str, name: str, username: str, pk: int):
        repo = repo_or_404(request, owner, name)
        archived = ArchivedRef.objects.filter(repository=repo, username=username, pk=pk).first()
        if archived is None or not selectors.visible_to(request.user, repo, username):
            raise NotFound("Archived ref not found.")
        data = RestoreSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        ref = services.archived_ref_restore(
            archived=archived, user=request.user, name=data.validated_data.get("name")
        )
        return Response({"ref": ref, "sha": archived.sha})
