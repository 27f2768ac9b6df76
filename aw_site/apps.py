from django.apps import AppConfig


class AwSiteConfig(AppConfig):
    name = "aw_site"
    verbose_name = "Agent-World site"

    def ready(self) -> None:
        from aw_site import signals  # noqa: F401  (connects worker lifecycle handlers)
