"""One router for every app's API."""

from rest_framework.routers import DefaultRouter

from arena import api as arena_api
from aw_site import jobs_api
from environments import api as environments_api
from tasks import api as tasks_api
from training import api as training_api

router = DefaultRouter()
router.register("jobs", jobs_api.JobViewSet, basename="job")
environments_api.register(router)
tasks_api.register(router)
training_api.register(router)
arena_api.register(router)

urlpatterns = router.urls
