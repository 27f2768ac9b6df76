from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "tasks"
    verbose_name = "Tasks"

    def ready(self) -> None:
        from tasks.environment_tabs import register_environment_tabs

        register_environment_tabs()  # the tool graph and task tabs of the environment page
