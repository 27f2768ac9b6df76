"""The API docs pages: drf-spectacular's Swagger UI and ReDoc views as console pages.

Their scripts and styles come from drf-spectacular-sidecar's static files (settings
``SPECTACULAR_SETTINGS``); the templates put them under the console's navigation.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView

# ReDoc's menu footer always loads its vendor's logo from cdn.redoc.ly; images from elsewhere
# than the site are refused, so the page never reaches outside it.
SITE_IMAGES_ONLY = "img-src 'self' data:"


class ApiDocsView(SpectacularSwaggerView):
    """Swagger UI, to read and try every API operation with the console session."""

    template_name = "aw_site/api_docs.html"


class ApiReferenceView(SpectacularRedocView):
    """ReDoc, the same schema as a reference to read."""

    template_name = "aw_site/api_redoc.html"

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response["Content-Security-Policy"] = SITE_IMAGES_ONLY
        return response
