"""Site URLs: console pages, REST API, OpenAPI schema and docs, admin, login."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from aw_site import api_urls
from aw_site.api_docs import ApiDocsView, ApiReferenceView

urlpatterns = [
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(template_name="registration/login.html"),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include(api_urls)),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", ApiDocsView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/redoc/", ApiReferenceView.as_view(url_name="api-schema"), name="api-redoc"),
    path("", include("aw_site.console_urls")),
]
