"""Retry or fail jobs whose worker stopped sending heartbeats (beat runs this every minute)."""

from django.core.management.base import BaseCommand

from aw_site.jobs import reap_stale_jobs


class Command(BaseCommand):
    help = "Retry or fail running jobs whose worker is gone."

    def handle(self, *args, **options):
        recovered = reap_stale_jobs()
        self.stdout.write(f"recovered {len(recovered)} job(s): {recovered}")
