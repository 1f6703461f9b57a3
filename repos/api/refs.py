"""The refs API (admins): list refs outside workspaces by namespace, remove one, remove many.

    GET    /api/v1/repos/{owner}/{name}/refs?prefix=refs/pull/   namespaces + one page of refs
    DELETE /api/v1/repos/{owner}/{name}/refs/pull/1/head          removes refs/pull/1/head
    POST   /api/v1/repos/{owner}/{name}/refs/remove               {"prefix": ...} or {"refs": [...]}

The path after `.../refs/` is the ref's name without its leading `refs/`, as GitHub's git refs
API has it. Private repositories answer 404 to outsiders, as everywhere; readers of a public one
get 403. repos/refs_admin.py does the work and says what can never be removed.
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from gitcore import gittools
from gitcore.oids import object_format
from repos import refs_admin, refs_listing
from repos.api.access import repo_or_404, require_admin


class RefNameField(serializers.CharField):
    """A ref name as text: bytes that are not UTF-8 (an imported ref's) as U+FFFD, as the push
    log records them (gittools.text_refname); JSON cannot carry them otherwise."""

    def to_representation(self, value) -> str:
        return gittools.text_refname(str(value))


class RepositoryRefSerializer(serializers.Serializer):
    ref = RefNameField()
    sha = serializers.CharField(source="oid")
    symref = RefNameField(allow_blank=True)


class RefNamespaceSerializer(serializers.Serializer):
    prefix = serializers.CharField()
    count = serializers.IntegerField()


class RefRemoveSerializer(serializers.Serializer):
    prefix = serializers.CharField(required=False, max_length=255, trim_whitespace=False)
    refs = serializers.ListField(
        child=serializers.CharField(max_length=255, trim_whitespace=False),
        required=False,
        allow_empty=False,
        max_length=refs_admin.MAX_REFS,
    )

    def validate(self, attrs):
        if ("prefix" in attrs) == ("refs" in attrs):
            raise ValidationError(
                {"non_field_errors": ["Give either prefix or refs, not both and not neither."]}
            )
        return attrs


REMOVAL = inline_serializer(
    "RefRemoval",
    {"removed": serializers.IntegerField(), "push_id": serializers.IntegerField(allow_null=True)},
)


def _removal(removal: refs_admin.Removal) -> dict:
    return {"removed": len(removal.removed), "push_id": removal.push.pk if removal.push else None}


class RefListView(GenericAPIView):
    serializer_class = RepositoryRefSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter("prefix", str, description="a namespace, e.g. refs/pull/ (default: all)")
        ],
        responses=RepositoryRefSerializer(many=True),
    )
    def get(self, request, owner: str, name: str):
        """Refs outside workspaces (paginated), with every namespace and its count in `namespaces`."""
        repo = repo_or_404(request, owner, name)
        require_admin(request, repo)
        _bare, namespaces, entries = refs_listing.refs_under(repo, request.query_params.get("prefix", ""))
        page = self.paginate_queryset(entries)
        response = self.get_paginated_response(RepositoryRefSerializer(page, many=True).data)
        response.data["namespaces"] = RefNamespaceSerializer(namespaces, many=True).data
        return response


def _delete_one(request, owner: str, name: str, ref: str) -> Response:
    repo = repo_or_404(request, owner, name)
    require_admin(request, repo)
    given = request.query_params.get("sha", "")
    fmt = object_format(repo.disk_path)
    sha = fmt.parse(given) if given else None
    if given and sha is None:
        raise ValidationError({"sha": [f"A full object id ({fmt.hexsz} hex digits)."]})
    refs_admin.ref_remove(
        repo=repo,
        refs=[f"refs/{ref}"],
        actor=request.user,
        via="api",
        expected={f"refs/{ref}": sha} if sha else None,
    )
    return Response(status=status.HTTP_204_NO_CONTENT)


_SHA_PARAM = OpenApiParameter("sha", str, description="remove only if the ref still points at this id")


class RefDetailView(APIView):
    @extend_schema(parameters=[_SHA_PARAM], responses={204: None})
    def delete(self, request, owner: str, name: str, ref: str):
        """Remove `refs/<ref>` (recorded as a push by you)."""
        return _delete_one(request, owner, name, ref)


class RefRemoveView(APIView):
    @extend_schema(request=RefRemoveSerializer, responses={200: REMOVAL})
    def post(self, request, owner: str, name: str):
        """Remove every ref under `prefix`, or the listed `refs`: all or none, in one transaction."""
        repo = repo_or_404(request, owner, name)
        require_admin(request, repo)
        data = RefRemoveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if "prefix" in data.validated_data:
            removal = refs_admin.namespace_remove(
                repo=repo, prefix=data.validated_data["prefix"], actor=request.user, via="api"
            )
        else:
            removal = refs_admin.ref_remove(
                repo=repo, refs=data.validated_data["refs"], actor=request.user, via="api"
            )
        return Response(_removal(removal))

    @extend_schema(parameters=[_SHA_PARAM], responses={204: None})
    def delete(self, request, owner: str, name: str):
        """`DELETE .../refs/remove` removes a ref named refs/remove: this route shadows it."""
        return _delete_one(request, owner, name, "remove")


urlpatterns: list = [
    path("repos/<str:owner>/<str:name>/refs", RefListView.as_view(), name="api-refs"),
    # Before refs/<path:ref>, which would take it.
    path("repos/<str:owner>/<str:name>/refs/remove", RefRemoveView.as_view(), name="api-refs-remove"),
    path("repos/<str:owner>/<str:name>/refs/<path:ref>", RefDetailView.as_view(), name="api-ref"),
]
