from django.apps import AppConfig
from django.db.models.signals import post_migrate


class TrainingConfig(AppConfig):
    name = "training"
    verbose_name = "Training"

    def ready(self) -> None:
        from training import signals

        post_migrate.connect(signals.after_migrate, sender=self)

        from tasks.service import register_policy_solver
        from training.consistency import policy_batch_solver

        register_policy_solver(policy_batch_solver)  # pass rates for the synthesis job
