"""Signals environments send to the apps above it, which environments must not import.

`environment_published(sender=Environment, environment=Environment, options=BuildOptions)`:
a build published a verified version. The tasks app listens (tasks/apps.py) and synthesizes
the goal-tier tasks the build's options ask for (`options.tasks`), so a catalogue's
environments can be sampled by rounds.
"""

from django.dispatch import Signal

environment_published = Signal()
