"""One router for every app's API, plus the episode API for external trainers."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from arena import api as arena_api
from arena import trajectory_api
from aw_site import jobs_api
from environments import api as environments_api
from serving import episode_api
from tasks import api as tasks_api
from training import api as training_api

router = DefaultRouter()
router.register("jobs", jobs_api.JobViewSet, basename="job")
environments_api.register(router)
tasks_api.register(router)
training_api.register(router)
trajectory_api.register(router)
arena_api.register(router)

urlpatterns = router.urls + [
    path("episodes/", episode_api.EpisodeCollection.as_view(), name="episode-create"),
    path("episodes/<str:key>/tools/", episode_api.EpisodeTools.as_view(), name="episode-tools"),
    path("episodes/<str:key>/call/", episode_api.EpisodeCall.as_view(), name="episode-call"),
    path("episodes/<str:key>/diff/", episode_api.EpisodeDiff.as_view(), name="episode-diff"),
    path("episodes/<str:key>/finish/", episode_api.EpisodeFinish.as_view(), name="episode-finish"),
]
