from django.urls import path

from django_floor import views

urlpatterns = [
    path("healthz", views.healthz),
    path("v1/projects/<str:project>/memory", views.Append.as_view()),
]
