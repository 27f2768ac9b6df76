"""Console pages (HTMX): catalogue, environments, tasks, trajectories, training, rounds, jobs."""

from django.urls import path

from arena import dashboard, trajectory_views
from arena import views as arena_views
from aw_site import views
from environments import catalogue_run_views
from environments import views as environment_views
from tasks import review_views
from tasks import views as task_views
from training import views as training_views

urlpatterns = [
    path("", dashboard.home, name="home"),
    path("overview/live/", dashboard.home_live, name="home-live"),
    path("overview/guide/dismiss/", dashboard.dismiss_guide, name="guide-dismiss"),
    # Catalogue and environments
    path("environments/", environment_views.catalogue, name="catalogue"),
    path("environments/new/", environment_views.new_environment, name="environment-new"),
    path("environments/yield/", environment_views.yield_page, name="environment-yield"),
    path("themes/", environment_views.theme_list, name="theme-list"),
    path("environments/catalogue-runs/", catalogue_run_views.run_list, name="catalogue-runs"),
    path(
        "environments/catalogue-runs/start/",
        catalogue_run_views.run_start,
        name="catalogue-run-start",
    ),
    path(
        "environments/catalogue-runs/<int:pk>/",
        catalogue_run_views.run_detail,
        name="catalogue-run",
    ),
    path(
        "environments/catalogue-runs/<int:pk>/progress/",
        catalogue_run_views.run_progress,
        name="catalogue-run-progress",
    ),
    path("themes/<int:pk>/build/", environment_views.theme_build, name="theme-build"),
    path(
        "environments/builds/<int:job>/", environment_views.build_status, name="environment-build"
    ),
    path(
        "environments/builds/<int:job>/progress/",
        environment_views.build_progress,
        name="environment-build-progress",
    ),
    path("environments/<int:pk>/", environment_views.environment_detail, name="environment-detail"),
    path(
        "environments/<int:pk>/tabs/<slug:tab>/",
        environment_views.environment_tab,
        name="environment-tab",
    ),
    path("tasks/<int:pk>/", task_views.task_detail, name="task-detail"),
    path("tasks/review/", review_views.task_review, name="task-review"),
    path("tasks/review/marks/", review_views.task_review_summary, name="task-review-summary"),
    path("tasks/<int:pk>/mark/", review_views.task_mark, name="task-mark"),
    # Trajectories and training
    path("trajectories/", trajectory_views.trajectory_list, name="trajectory-list"),
    path("trajectories/<int:pk>/", trajectory_views.trajectory_detail, name="trajectory-detail"),
    path("training/", training_views.training_run_list, name="training-run-list"),
    path("training/new/", training_views.training_run_new, name="training-run-new"),
    path("training/<int:pk>/", training_views.training_run_detail, name="training-run-detail"),
    path("policies/", training_views.policy_list, name="policy-list"),
    path("policies/new/", training_views.policy_create, name="policy-create"),
    path(
        "policies/new-fault-injection/",
        training_views.fault_policy_create,
        name="policy-create-fault",
    ),
    path(
        "training/<int:pk>/metrics/",
        training_views.training_run_metrics,
        name="training-run-metrics",
    ),
    # Evolution rounds and reviews
    path("rounds/", arena_views.round_list, name="round-list"),
    path("rounds/start/", arena_views.start_round_view, name="round-start"),
    path("rounds/<int:number>/", arena_views.round_detail, name="round-detail"),
    path("rounds/<int:number>/progress/", arena_views.round_progress, name="round-progress"),
    path("rounds/<int:number>/review/", arena_views.bulk_review_view, name="round-review"),
    path(
        "evaluations/<int:pk>/calibration/",
        arena_views.evaluation_calibration_view,
        name="evaluation-calibration",
    ),
    path("proposals/<int:pk>/review/", arena_views.review_proposal_view, name="proposal-review"),
    # Jobs
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/progress/", views.job_progress, name="job-progress"),
]
