from django.urls import path

from notifications_app import views

urlpatterns = [
    path("manifest.webmanifest", views.manifest, name="web-manifest"),
    path("service-worker.js", views.service_worker, name="service-worker"),
    path("notifications/push/", views.push_page, name="push-page"),
    path(
        "notifications/push/subscription/",
        views.push_subscription,
        name="push-subscription",
    ),
]
