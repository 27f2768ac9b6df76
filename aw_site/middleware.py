"""Request-size limits that hold before any middleware parses a body.

Django checks DATA_UPLOAD_MAX_MEMORY_SIZE (AW_MAX_REQUEST_BYTES) against a multipart body's
non-file fields only, and the CSRF middleware parses a form before any view runs. So multipart
bodies are checked here, by Content-Length, first: the upload endpoints (a data file for a build)
allow AW_MAX_UPLOAD_BYTES plus room for the form fields; every other path AW_MAX_REQUEST_BYTES.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse, JsonResponse

# The endpoints that take a data file; all else is JSON or a small form.
UPLOAD_PATHS = ("/api/environments/build/", "/environments/new/")
FORM_OVERHEAD_BYTES = 64 * 1024


class RequestSizeLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.META.get("CONTENT_TYPE", "").startswith("multipart/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            upload = request.path in UPLOAD_PATHS
            limit = settings.AW_MAX_UPLOAD_BYTES if upload else settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            if length > limit + FORM_OVERHEAD_BYTES:
                what = "file" if upload else "request body"
                message = f"{what} too large ({length} bytes; limit {limit} bytes)"
                status = 400 if upload else 413
                if request.path.startswith("/api/"):
                    return JsonResponse({"error": message, "detail": message}, status=status)
                return HttpResponse(message, status=status, content_type="text/plain")
        return self.get_response(request)
