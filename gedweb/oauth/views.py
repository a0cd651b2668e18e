"""The OAuth pages a person sees: the consent page, and their grants with a revoke button.

The consent page is django-oauth-toolkit's authorization endpoint with
GedWeb's form: behind the team login (LoginRequiredMixin, so the same
accounts and the same login throttling), it names the client and the host it
sends the person back to, and asks for one project the person is a member of
and one memory scope. The scope string the token gets is built here from
that choice (gedweb/oauth/scopes.py), never taken from the client.
"""

from __future__ import annotations

import hmac
import math
import time
from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.utils.csp import CSP
from django.views.decorators.http import require_POST
from oauth2_provider.forms import AllowForm
from oauth2_provider.models import get_application_model
from oauth2_provider.views import AuthorizationView

from gedweb.logins import client_ip_address
from gedweb.oauth import grants, scopes
from gedweb.throttling import count_request
from memory.models import Membership, Project, hash_token


def rate_limited(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """GEDWEB_OAUTH_RATE_LIMIT per client address on a client endpoint's POSTs.

    The API's own counters (gedweb/throttling.py), keyed by the address the
    login throttling believes (gedweb/logins.py). Past the limit: 429 with
    Retry-After, in OAuth's error shape, before the toolkit reads anything.
    """

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        rate = settings.OAUTH_RATE_LIMIT
        if rate is not None and request.method == "POST":
            now = time.time()
            hits, window_end = count_request(
                f"oauth:{client_ip_address(request) or 'unknown'}", rate, now)
            if hits > rate.requests:
                wait = max(1, math.ceil(window_end - now))
                response = JsonResponse({
                    "error": "temporarily_unavailable",
                    "error_description": f"more than {rate.describe('requests')} from this "
                                         f"address; retry after {wait} s"}, status=429)
                response["Retry-After"] = str(wait)
                return response
        return view(request, *args, **kwargs)

    return wrapped


def project_roles(user: Any) -> list[tuple[str, str, str]]:
    """(project id, name, role) of every project the person may grant, by id."""
    visible = Project.objects.visible_to(user).order_by("id").values_list("id", "name")
    roles = dict(Membership.objects.filter(user=user).values_list("project_id", "role"))
    return [(pid, name, "superuser" if user.is_superuser else roles.get(pid, ""))
            for pid, name in visible]


class ConsentForm(AllowForm):  # type: ignore[misc]  # the toolkit is untyped
    project = forms.ChoiceField(required=False)
    memory_scope = forms.ChoiceField(
        required=False, choices=[(scope, scope) for scope in scopes.MEMORY_SCOPES],
        initial=scopes.READ, widget=forms.RadioSelect,
    )
    memory_token = forms.CharField(
        required=False, strip=False, widget=forms.PasswordInput(render_value=False),
        label="Memory write token",
    )

    def __init__(self, *args: Any, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.roles = {pid: role for pid, _, role in project_roles(user)} if user else {}
        self.fields["project"].choices = [
            (pid, f"{pid} · {name} ({role})") for pid, name, role in project_roles(user)
        ] if user else []

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean()
        if not data.get("allow"):
            return data  # a refusal needs no choice
        project, scope = data.get("project"), data.get("memory_scope")
        if not project:
            self.add_error("project", "choose a project")
            return data
        if not scope:
            self.add_error("memory_scope", "choose what the client may do")
            return data
        if scope not in scopes.grantable(self.roles.get(project)):
            self.add_error("memory_scope",
                           f"your role in {project} does not let you grant {scope}")
            return data
        if scope == scopes.WRITE and settings.MEMORY_WRITE_TOKEN:
            shown = data.get("memory_token") or ""
            if not hmac.compare_digest(hash_token(shown), hash_token(settings.MEMORY_WRITE_TOKEN)):
                self.add_error("memory_token",
                               "memory:write needs this server's memory write token")
                return data
        data["scope"] = scopes.GrantScope(memory=scope, project_id=project).as_string()
        return data


class ConsentView(AuthorizationView):  # type: ignore[misc]  # the toolkit is untyped
    template_name = "oauth/consent.html"
    form_class = ConsentForm

    def get_form_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = super().get_form_kwargs()
        kwargs["user"] = self.request.user
        return kwargs

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        form = context.get("form")
        client_id = (self.oauth2_data or {}).get("client_id") or (
            form.data.get("client_id") if form is not None and form.is_bound else None)
        redirect_uri = (self.oauth2_data or {}).get("redirect_uri") or (
            form.data.get("redirect_uri") if form is not None and form.is_bound else None)
        application = (get_application_model().objects.filter(client_id=client_id).first()
                       if client_id else None)
        context.update({
            "client_name": grants.client_label(application) if application else "",
            "client_id": client_id,
            "redirect_host": urlsplit(redirect_uri).netloc if redirect_uri else "",
            "needs_write_token": bool(settings.MEMORY_WRITE_TOKEN),
            "has_projects": bool(form is not None and form.fields["project"].choices),
        })
        self._redirect_uri = redirect_uri
        return context

    def render_to_response(self, context: dict[str, Any], **kwargs: Any) -> HttpResponse:
        response: HttpResponse = super().render_to_response(context, **kwargs)
        redirect_uri = getattr(self, "_redirect_uri", None)
        if redirect_uri:
            # The form's answer is a redirect to the client; browsers hold a
            # form's redirects to form-action, so the client's origin is named.
            parts = urlsplit(redirect_uri)
            response._csp_config = {  # type: ignore[attr-defined]  # Django's CSP hook
                **settings.SECURE_CSP,
                "form-action": [CSP.SELF, f"{parts.scheme}://{parts.netloc}"],
            }
        return response


@login_required
def grant_list(request: HttpRequest) -> HttpResponse:
    return render(request, "oauth/grants.html", {"grants": grants.grant_list(user=request.user)})


class RevokeForm(forms.Form):
    application = forms.IntegerField(min_value=1)
    scope = forms.CharField(max_length=200)


@login_required
@require_POST
def grant_revoke(request: HttpRequest) -> HttpResponse:
    form = RevokeForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest("name the grant: its application and scope")
    grants.grant_revoke(user=request.user, application_id=form.cleaned_data["application"],
                        scope=form.cleaned_data["scope"])
    return redirect("oauth-grants")
