"""Team pages. The landing page for now; project browsing follows in the pages work."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "memory/home.html")
