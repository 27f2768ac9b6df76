"""Console pages (HTMX), one include per app."""

from django.urls import include, path

from aw_site import views

urlpatterns = [
    path("", views.home, name="home"),
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/progress/", views.job_progress, name="job-progress"),
]
