from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from synthorg_site import api_docs, health, pages
from synthorg_site.metrics.views import metrics
from trust_app.sso import views as sso_views

# Pages refused or failed: the console's layout with a way back (API paths keep the envelope,
# synthorg_site.http_edge).
handler400 = "synthorg_site.error_pages.views.page_400"
handler403 = "synthorg_site.error_pages.views.page_403"
handler404 = "synthorg_site.error_pages.views.page_404"
handler500 = "synthorg_site.error_pages.views.page_500"

urlpatterns = [
    # Agents' calls first: Django tries patterns in order, and every page include ahead
    # of them would be tried and fail on each call (no route hides another, so the
    # order decides nothing else: tests/common/test_every_route.py).
    path("api/v1/", include("tools_app.api.urls")),
    path("api/v1/", include("audit_app.api.urls")),
    path("api/v1/", include("trust_app.api.urls")),
    path("api/v1/", include("approvals_app.api.urls")),
    path("healthz", health.healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("", pages.dashboard, name="dashboard"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", sso_views.sign_out, name="logout"),
    path("accounts/sso/", sso_views.sso_start, name="sso-start"),
    path("accounts/sso/callback/", sso_views.sso_callback, name="sso-callback"),
    path("admin/", admin.site.urls),
    path("", include("approvals_app.urls")),
    path("", include("trust_app.urls")),
    path("", include("tools_app.urls")),
    path("", include("audit_app.urls")),
    path("", include("secrets_app.urls")),
    path("", include("notifications_app.urls")),
    path("api/schema/", api_docs.schema, name="api-schema"),
    path("api/docs/", api_docs.docs, name="api-docs"),
]
