from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "tasks"
    verbose_name = "Tasks"

    def ready(self) -> None:
        from tasks.environment_tabs import register_environment_tabs

        register_environment_tabs()  # the tool graph and task tabs of the environment page

        from environments.signals import environment_published
        from tasks.receivers import import_released_questions, queue_goal_tasks

        # a build asking for tasks (BuildOptions.tasks) gets them once it publishes
        environment_published.connect(queue_goal_tasks, dispatch_uid="tasks.queue_goal_tasks")
        # an environment of an Agent-World release gets the release's questions as tasks
        environment_published.connect(
            import_released_questions, dispatch_uid="tasks.import_released_questions"
        )
