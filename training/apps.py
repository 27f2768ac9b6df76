from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "training"
    verbose_name = "Training"

    def ready(self) -> None:
        from tasks.service import register_policy_solver
        from training.consistency import policy_batch_solver

        register_policy_solver(policy_batch_solver)  # pass rates for the synthesis job
