"""Console pages of secrets_app."""

from django.urls import path

from secrets_app import views

urlpatterns = [
    path("secrets/", views.secret_index, name="secret-list"),
    path("secrets/add/", views.secret_add, name="secret-add"),
    path("secrets/rotate-keys/", views.secret_rotate_keys_view, name="secret-rotate-keys"),
    path("secrets/<str:name>/rotate/", views.secret_rotate, name="secret-rotate"),
    path("secrets/<str:name>/revoke/", views.secret_revoke_view, name="secret-revoke"),
    path("secrets/<str:name>/grant/", views.secret_grant_view, name="secret-grant"),
    path("secrets/<str:name>/ungrant/", views.secret_ungrant_view, name="secret-ungrant"),
]
