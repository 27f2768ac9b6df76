"""Refusals: the expected ends of a job or a command, said in one line of words.

Standard library only, so that domain code raising one (a build stage) needs no Django set-up.
"""

from __future__ import annotations


class JobRefused(Exception):
    """An expected end of a job: its input cannot give a result and the message says why (a
    build whose tools fail verification). Nothing is broken, so the job runner logs it in one
    line and keeps the traceback in the job's log tail; one raised from another error (its
    ``__cause__``) is still logged with its traceback, since that cause may be a bug."""
