"""`POST /api/v1/repos` with `import_url`: a repository created by importing it (202), on top
of repos' list and create (repos.api.views). This module routes `repos` for both."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from repos.api import serializers as repo_serializers
from repos.api import views
from repos.api.serializers import RepositorySerializer
from repos.models import RefsMode
from sources import import_requests
from sources.api.imports import ImportSerializer

IMPORT_FIELDS = ("import_username", "import_password", "refs", "mirror")


# Named as repos' serializer, which it replaces on this route: the schema keeps its name.
class RepositoryCreateSerializer(repo_serializers.RepositoryCreateSerializer):
    # An import instead of an empty repository (202; sources.import_requests): the credentials are
    # used once and never stored, `refs: all` is for staff, `mirror` keeps it in sync.
    import_url = serializers.CharField(
        max_length=2000,
        required=False,
        allow_blank=True,
        help_text="https://, http:// or git:// URL of an existing repository.",
    )
    import_username = serializers.CharField(max_length=200, required=False, allow_blank=True, write_only=True)
    import_password = serializers.CharField(
        max_length=1000,
        required=False,
        allow_blank=True,
        write_only=True,
        trim_whitespace=False,
        style={"input_type": "password"},
    )
    refs = serializers.ChoiceField(choices=RefsMode.choices, required=False)
    mirror = serializers.BooleanField(required=False)

    def validate(self, attrs):
        if not (attrs.get("import_url") or "").strip():
            extra = [k for k in IMPORT_FIELDS if attrs.get(k)]
            if extra:
                raise serializers.ValidationError({extra[0]: ["Only with import_url."]})
        elif attrs.get("default_branch"):
            raise serializers.ValidationError({"default_branch": ["An import takes the source's HEAD."]})
        return attrs


class RepositoryListView(views.RepositoryListView):
    create_serializer_class = RepositoryCreateSerializer

    @extend_schema(
        request=RepositoryCreateSerializer, responses={201: RepositorySerializer, 202: RepositorySerializer}
    )
    def post(self, request):
        """Create a repository (201), or with `import_url` start importing one (202: the body is
        the repository plus `import`, whose `url` shows its progress; also in `Location`)."""
        return super().post(request)

    def create(self, request, fields: dict) -> Response:
        source = fields.pop("import_url", "").strip()
        extra = {k: fields.pop(k) for k in IMPORT_FIELDS if k in fields}
        if not source:
            return super().create(request, fields)
        imp = import_requests.import_request(
            requester=request.user,
            source=source,
            username=extra.get("import_username", ""),
            password=extra.get("import_password", ""),
            refs_mode=extra.get("refs") or RefsMode.DEFAULT,
            mirror=extra.get("mirror", False),
            **fields,
        )
        body = self.get_serializer(imp.repository).data
        body["import"] = ImportSerializer(imp, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["import"]["url"]})


urlpatterns: list = [
    path("repos", RepositoryListView.as_view(), name="api-repos"),
]
