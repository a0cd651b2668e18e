"""Top-level routes: the API under /v1, health, metrics, admin and the team pages."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from oauth2_provider import views as oauth
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.settings import APISettings

from gedweb import (
    converters,  # noqa: F401  (registers the path converters)
    pages,
)
from gedweb.api import views as api
from gedweb.metrics import metrics_view
from gedweb.oauth import views as oauth_pages
from governance.api import urls as governance_api
from memory import views as memory_pages

# Swagger UI's page (templates/drf_spectacular/swagger_ui.html) has one
# inline script and one inline style; per-request nonces admit exactly
# those. Everything else is the site-wide SECURE_CSP.
DOCS_CSP: dict[str, list[str]] = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}


class _SchemaNegotiation(DefaultContentNegotiation):
    # URL_FORMAT_OVERRIDE is off for the API (?format= is the context
    # bundle's own); the schema keeps ?format=json|yaml.
    # drf-stubs type it as api_settings' stub-only subclass; the runtime class is this one.
    settings = APISettings({"URL_FORMAT_OVERRIDE": "format"})  # type: ignore[assignment]  # stubs


# The schema and its docs are drf-spectacular's views; their errors (406,
# too many parameters) are the JSON shape like every other /v1 answer.
class SchemaView(api.JSONErrorsMixin, SpectacularAPIView):
    content_negotiation_class = _SchemaNegotiation


class DocsView(api.JSONErrorsMixin, SpectacularSwaggerView):
    pass


# OAuth 2.1 for /mcp (docs/oauth.md): django-oauth-toolkit's endpoints under
# its own namespace, which its metadata views reverse; the consent page is
# GedWeb's. The toolkit's application-management and introspection views are
# not served: operators manage clients and tokens in the admin.
oauth_patterns = [
    path(".well-known/oauth-authorization-server", oauth.OAuthServerMetadataView.as_view(),
         name="oauth-server-metadata"),
    path(".well-known/oauth-protected-resource",
         oauth.OAuthProtectedResourceMetadataView.as_view(), name="oauth-resource-metadata"),
    path(".well-known/oauth-protected-resource/mcp",
         oauth.OAuthProtectedResourceMetadataView.as_view(),
         name="oauth-resource-metadata-path"),
    path("oauth/authorize/", oauth_pages.ConsentView.as_view(), name="authorize"),
    path("oauth/token/", oauth_pages.rate_limited(oauth.TokenView.as_view()), name="token"),
    path("oauth/revoke/", oauth_pages.rate_limited(oauth.RevokeTokenView.as_view()),
         name="revoke-token"),
    path("oauth/register/", oauth_pages.rate_limited(oauth.DynamicClientRegistrationView.as_view()),
         name="dcr-register"),
    path("oauth/register/<str:client_id>/",
         oauth.DynamicClientRegistrationManagementView.as_view(),
         name="dcr-register-management"),
]

urlpatterns = [
    path("", include((oauth_patterns, "oauth2_provider"))),
    path("oauth/grants/", oauth_pages.grant_list, name="oauth-grants"),
    path("oauth/grants/revoke", oauth_pages.grant_revoke, name="oauth-grant-revoke"),
    path("", memory_pages.home, name="home"),
    path("healthz", api.HealthView.as_view(), name="healthz"),
    # The admin token or GEDWEB_METRICS_ALLOW; a 404 page to anyone else.
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The overview shows both apps, so it is the site's page; each app's
    # pages below name only their own app.
    path("p/<project:project_id>/", pages.project_overview, name="project-overview"),
    path("p/<project:project_id>/", include("memory.urls")),
    path("p/<project:project_id>/", include("governance.urls")),
    path("v1/schema", SchemaView.as_view(), name="schema"),
    path(
        "v1/docs",
        csp_override(DOCS_CSP)(DocsView.as_view(url_name="schema")),
        name="docs",
    ),
    # Django tries the routes in order. A handoff (documents/handoff/<work_id>.md)
    # needs governance's rule, so its route comes before memory's
    # documents/<path>; then memory's, which every append and read takes,
    # before governance's thirty-odd others (tried first, they made an
    # append's route cost 32 us to find, 21 now). No other route of either
    # app matches the other's (tests/site/test_routes.py).
    path("v1/", include((governance_api.handoff_urlpatterns, "governance-handoff"))),
    path("v1/", include("memory.api.urls")),
    path("v1/", include("governance.api.urls")),
    # Last: any other /v1 path is a JSON 404, whatever DEBUG says; so is a
    # path value that fits no converter (gedweb/converters.py).
    re_path(r"^v1(?:/.*)?$", api.NotFoundView.as_view()),
]

handler404 = "gedweb.views.page_not_found"
handler500 = "gedweb.views.server_error"
