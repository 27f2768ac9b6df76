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
        from training.models import Policy

        # pass rates for the synthesis job, and the check of the policy id it is given
        register_policy_solver(
            policy_batch_solver, exists=lambda pk: Policy.objects.filter(pk=pk).exists()
        )
