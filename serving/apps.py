from django.apps import AppConfig


class ServingConfig(AppConfig):
    name = "serving"
    verbose_name = "Serving"

    def ready(self) -> None:
        from serving.environment_tabs import register_environment_tabs

        register_environment_tabs()  # the MCP connection tab of the environment page
