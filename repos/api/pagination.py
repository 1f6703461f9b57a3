"""Page-number pagination for every list of the API, and its OpenAPI description.

Lists answer {"count", "next", "previous", "results"}. Views that paginate by hand (APIView,
not a generic list view) describe their response with `paginated(Serializer)`, so the schema
says what is returned rather than a bare array.
"""

from __future__ import annotations

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    page_size = 30
    page_size_query_param = "per_page"
    max_page_size = 100

    def get_page_size(self, request):
        # A per_page that is not a positive number is the client's mistake: say so, rather than
        # quietly answering a page of another size.
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            raise ValidationError({"per_page": ["A positive integer."]}) from None
        if size < 1:
            raise ValidationError({"per_page": ["A positive integer."]})
        return min(size, self.max_page_size)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
        return parameters


def paginated(
    serializer_class: type[serializers.Serializer], **extra: serializers.Field
) -> serializers.Serializer:
    """The response of a page of `serializer_class` items (plus `extra` top-level fields)."""
    name = serializer_class.__name__.removesuffix("Serializer")
    return inline_serializer(
        name=f"Paginated{name}List",
        fields={
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": serializer_class(many=True),
            **extra,
        },
    )
