"""Create (or update) a console/API user with a role and print an API token."""

from __future__ import annotations

import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token

from aw_site.roles import ROLE_ORDER, grant_role


class Command(BaseCommand):
    help = "Create or update a user with the viewer, reviewer or admin role."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", choices=ROLE_ORDER, required=True)
        parser.add_argument(
            "--password-env",
            default="AW_USER_PASSWORD",
            help="Environment variable holding the password (never a command-line argument)",
        )

    def handle(self, *args, username: str, role: str, password_env: str, **options):
        password = os.environ.get(password_env, "")
        if len(password) < 8:
            raise CommandError(f"set {password_env} to a password of at least 8 characters")
        user, created = get_user_model().objects.get_or_create(username=username)
        user.set_password(password)
        user.is_staff = role == "admin"
        user.save()
        grant_role(user, role)
        token, _ = Token.objects.get_or_create(user=user)
        verb = "created" if created else "updated"
        self.stdout.write(f"{verb} {username} ({role}); API token: {token.key}")
