from django.apps import AppConfig


class EnvironmentsConfig(AppConfig):
    name = "environments"
    verbose_name = "Environments"

    def ready(self) -> None:
        from environments.views import register_own_tabs

        register_own_tabs()  # apps above add theirs (tasks/apps.py): environments/page_tabs.py
