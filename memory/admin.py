"""Operator admin: projects and tokens are managed here; memory is read-only.

Least privilege (docs/admin.md): every action and decision button names the
model permissions it needs, and a non-superuser sees and acts only on the
projects where they are an operator member (ProjectScopedAdmin).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from gedweb.admin import (
    ProjectFilter,
    ProjectScopedAdmin,
    ReadOnlyAdmin,
    operator_name,
    post_only_url,
)
from gedweb.errors import DomainError
from gedweb.validation import validation_error_line
from memory import quotas, redaction, secret_scan, services
from memory.models import (
    AllowedSecret,
    ChainCheckpoint,
    DocumentRevision,
    Membership,
    MemoryCandidate,
    MemoryEntry,
    Project,
    ProjectQuota,
    ProjectToken,
    SecretFinding,
    TextRedaction,
)

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldGroups
    from django.contrib.auth.models import User

    from memory.querysets import DocumentRevisionQuerySet, EntryQuerySet

    # The stubs make forms and inlines generic in their models; at runtime
    # they are not subscriptable (no django-stubs-ext), so the parameters
    # exist for mypy only.
    ProjectFormBase = forms.ModelForm[Project]
    AllowedSecretFormBase = forms.ModelForm[AllowedSecret]
    TokenFormBase = forms.ModelForm[ProjectToken]
    TokenInlineBase = admin.TabularInline[ProjectToken, Project]
    MembershipInlineBase = admin.TabularInline[Membership, Project]
else:
    ProjectFormBase = TokenFormBase = AllowedSecretFormBase = forms.ModelForm
    TokenInlineBase = MembershipInlineBase = admin.TabularInline

# The one page that shows a new token; see token_shown_once().
TOKEN_CREATED_TEMPLATE = "admin/memory/token_created.html"


def token_shown_once(
    request: HttpRequest, *, project: Project, name: str, raw: str, model_admin: Any
) -> TemplateResponse:
    """The page that shows a new token, once.

    The token is only in this response's body: never in messages (a cookie
    the browser keeps and anyone can decode), the session or a redirect URL,
    and no-store keeps it out of caches and the back button's copy.
    """
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "Copy the new token now",
        "project": project,
        "token_name": name,
        "token": raw,
        "project_url": reverse("admin:memory_project_change", args=[project.pk]),
        "token_list_url": reverse("admin:memory_projecttoken_changelist")
        + f"?project__id__exact={project.pk}",
        "token_add_url": reverse("admin:memory_projecttoken_add") + f"?project={project.pk}",
    }
    response = TemplateResponse(request, TOKEN_CREATED_TEMPLATE, context)
    response["Cache-Control"] = "no-store"
    return response


class ProjectCreateForm(ProjectFormBase):
    class Meta:
        model = Project
        fields = ["id", "name"]


class TokenInline(TokenInlineBase):
    model = ProjectToken
    fields = ("name", "prefix", "created_at", "revoked_at")  # never token_hash
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MembershipInline(MembershipInlineBase):
    """Who may read this project's team pages, and in which role."""

    model = Membership
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]
    autocomplete_fields = ["user"]
    extra = 0


@admin.register(Project)
class ProjectAdmin(ProjectScopedAdmin):
    project_path = "pk"
    list_display = ["id", "name", "created_at"]
    search_fields = ["id", "name"]
    inlines = [MembershipInline, TokenInline]

    def get_inlines(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        # Members are added once the project exists; creation stays one form.
        return self.inlines if obj is not None else [TokenInline]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Any]]:
        if obj is None:
            kwargs["form"] = ProjectCreateForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["id", "created_at"] if obj is not None else []

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a project's memory is append-only, so projects stay

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        token_admin = self.admin_site.get_model_admin(ProjectToken)
        context = {
            "can_add_token": token_admin.has_add_permission(request),
            "token_add_url": reverse("admin:memory_projecttoken_add"),
            **(extra_context or {}),
        }
        return super().change_view(request, object_id, form_url, context)

    def save_model(self, request: HttpRequest, obj: Project, form: Any, change: bool) -> None:
        if change:
            obj.save(update_fields=["name"])
            return
        with transaction.atomic():
            project, raw = services.project_create(project_id=obj.id, name=obj.name)
            if not request.user.is_superuser:
                # Otherwise the project would vanish from its creator's admin.
                # The admin serves only logged-in staff: never the anonymous user.
                operator = cast("User", request.user)
                services.membership_set(
                    user=operator, project=project, role=Membership.Role.OPERATOR
                )
        obj.created_at = project.created_at
        obj._state.adding = False
        # For response_add only; never stored (an attribute of this one instance).
        setattr(obj, "_new_token", raw)

    def response_add(self, request: HttpRequest, obj: Project, post_url_continue: Any = None
                     ) -> HttpResponse:
        return token_shown_once(
            request, project=obj, name=services.DEFAULT_TOKEN_NAME, raw=getattr(obj, "_new_token"),
            model_admin=self,
        )


@admin.register(Membership)
class MembershipAdmin(ProjectScopedAdmin):
    list_display = ["project", "user", "role", "created_at"]
    list_filter = ["role", ("project", ProjectFilter)]
    list_select_related = ["project", "user"]
    search_fields = ["project__id", "user__username", "user__email"]
    autocomplete_fields = ["user", "project"]
    readonly_fields = ["created_at"]


class TokenCreateForm(TokenFormBase):
    class Meta:
        model = ProjectToken
        fields = ["project", "name"]

    def clean(self) -> dict[str, Any]:
        # The unique-active-name constraint names revoked_at, which is not on
        # the form, so Django skips it; say so here rather than after saving.
        # project_token_create checks again inside its transaction.
        super().clean()
        cleaned = self.cleaned_data  # what ModelForm.clean returns
        project, name = cleaned.get("project"), cleaned.get("name")
        if project and name and ProjectToken.objects.active().filter(
            project=project, name=name
        ).exists():
            self.add_error("name", f"{project.pk} already has an active token named {name!r}")
        return cleaned


@admin.register(ProjectToken)
class ProjectTokenAdmin(ProjectScopedAdmin):
    list_display = ["project", "name", "prefix", "created_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter), ("project", ProjectFilter)]
    list_select_related = ["project"]
    search_fields = ["project__id", "name", "prefix"]
    # Only the hash of a token is stored, and even that is never shown.
    exclude = ["token_hash"]
    actions = ["revoke_tokens"]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Any]]:
        if obj is None:
            kwargs["form"] = TokenCreateForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> _FieldGroups:
        if obj is None:
            return ["project", "name"]
        return ["project", "name", "prefix", "created_at", "revoked_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return []
        return ["project", "name", "prefix", "created_at", "revoked_at"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoke instead, so who held which token stays on record

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("memory.change_projecttoken")

    def save_model(self, request: HttpRequest, obj: ProjectToken, form: Any, change: bool) -> None:
        if change:
            return
        try:
            record, raw = services.project_token_create(project=obj.project, name=obj.name)
        except (DomainError, ValidationError) as exc:
            # The form already checked the name; this is a lost race.
            messages.error(request, str(getattr(exc, "message", exc)))
            return
        obj.pk = record.pk
        obj._state.adding = False
        # For response_add only; never stored (an attribute of this one instance).
        setattr(obj, "_new_token", raw)

    def response_add(self, request: HttpRequest, obj: ProjectToken, post_url_continue: Any = None
                     ) -> HttpResponse:
        raw = getattr(obj, "_new_token", None)
        if raw is None:  # the lost race above: no token was made
            return HttpResponseRedirect(reverse("admin:memory_projecttoken_changelist"))
        return token_shown_once(
            request, project=obj.project, name=obj.name, raw=raw, model_admin=self
        )

    @admin.action(description="Revoke selected tokens", permissions=["revoke"])
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[ProjectToken]) -> None:
        count = 0
        for token in queryset.filter(revoked_at__isnull=True):
            token.revoke()
            count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


@admin.register(MemoryEntry)
class MemoryEntryAdmin(ReadOnlyAdmin):
    list_display = ["project", "seq", "category", "short_content", "source", "author",
                    "created_at"]
    list_filter = [("project", ProjectFilter), "category"]
    list_select_related = ["project"]
    search_fields = ["uuid", "category", "source", "author"]
    search_help_text = "Words of the content (full-text), or a uuid, category, source or author."
    ordering = ["project_id", "-seq"]
    show_full_result_count = False
    actions = ["redact_entries"]

    # Shown after the record's own fields on the (read-only) entry page: the
    # correction chain one step either way, as the team pages show it.
    readonly_fields = ["corrects_entry", "corrected_by_entries"]

    @admin.display(description="content")
    def short_content(self, obj: MemoryEntry) -> str:
        return Truncator(obj.content).chars(80)

    def _entry_link(self, entry: MemoryEntry) -> str:
        url = reverse("admin:memory_memoryentry_change", args=[entry.pk])
        return format_html('<a href="{}">#{}</a> ({}): {}', url, entry.seq, entry.category,
                           Truncator(entry.content).chars(100))

    @admin.display(description="corrects")
    def corrects_entry(self, obj: MemoryEntry) -> str:
        if obj.corrects_id is None:
            return "nothing: this entry is not a correction"
        return self._entry_link(MemoryEntry.objects.get(pk=obj.corrects_id))

    @admin.display(description="corrected by")
    def corrected_by_entries(self, obj: MemoryEntry) -> str:
        # Corrections only name entries of their own project (memory.services).
        rows = list(MemoryEntry.objects.filter(corrects_id=obj.pk).order_by("seq"))
        if not rows:
            return "nothing: no later entry corrects this one"
        return format_html("<ul>{}</ul>", format_html_join(
            "", "<li>{}</li>", ((self._entry_link(row),) for row in rows)))

    # Redaction removes content for good: its own permission, which no
    # operator role grants by default (docs/operations.md, "Redaction").
    def has_redact_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("memory.redact_memoryentry")

    @admin.action(description="Redact content of selected entries (permanent)",
                  permissions=["redact"])
    def redact_entries(self, request: HttpRequest, queryset: QuerySet[MemoryEntry]
                       ) -> HttpResponse | None:
        entries = list(queryset.select_related("project").order_by("project_id", "seq"))
        reason = request.POST.get("reason", "")
        if request.POST.get("confirm") != "yes" or not reason.strip():
            if request.POST.get("confirm") == "yes":
                self.message_user(request, "Say why the content is redacted.", messages.ERROR)
            return TemplateResponse(request, "admin/memory/memoryentry/redact.html", {
                **self.admin_site.each_context(request), "opts": self.model._meta,
                "entries": entries, "reason": reason, "by": operator_name(request),
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                "title": "Redact content",
            })
        done = 0
        for entry in entries:
            try:
                redaction.memory_entry_redact(project=entry.project, seq=entry.seq,
                                              reason=reason, by=operator_name(request))
            except DomainError as exc:
                self.message_user(request, f"{entry}: {exc.message}", messages.ERROR)
                continue
            except ValidationError as exc:
                self.message_user(request, f"{entry}: {validation_error_line(exc)}",
                                  messages.ERROR)
                continue
            done += 1
        if done:
            self.message_user(request, f"Redacted {done} entr{'y' if done == 1 else 'ies'}.",
                              messages.SUCCESS)
        return None

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[MemoryEntry], search_term: str
    ) -> tuple[QuerySet[MemoryEntry], bool]:
        found, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        if search_term.strip():
            # Content through the full-text index, as the team pages search it
            # (the admin's queryset comes from MemoryEntry.objects, an EntryQuerySet).
            found = found | cast("EntryQuerySet", queryset).search(search_term)
        return found, may_have_duplicates


@admin.register(ChainCheckpoint)
class ChainCheckpointAdmin(ReadOnlyAdmin):
    list_display = ["project", "seq", "hash", "created_at"]
    list_filter = [("project", ProjectFilter)]
    list_select_related = ["project"]
    ordering = ["project_id", "-seq"]


@admin.register(MemoryCandidate)
class MemoryCandidateAdmin(ReadOnlyAdmin):
    """Candidates are read here and approved or rejected on their page or in the list."""

    list_display = ["project", "uuid", "category", "short_content", "source", "author", "status",
                    "created_at"]
    list_filter = ["status", ("project", ProjectFilter)]
    list_select_related = ["project"]
    search_fields = ["uuid", "content", "category", "source", "author"]
    actions = ["approve_candidates", "reject_candidates"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]

    @admin.display(description="content")
    def short_content(self, obj: MemoryCandidate) -> str:
        return Truncator(obj.content).chars(80)

    # Approval writes a permanent entry, so it needs the entry's add permission too.
    def has_approve_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perms(
            ["memory.change_memorycandidate", "memory.add_memoryentry"]
        )

    def has_reject_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("memory.change_memorycandidate")

    def _resolve_one(self, request: HttpRequest, candidate: MemoryCandidate, approve: bool
                     ) -> bool:
        """Approve or reject through the API's services; a refusal is a message."""
        resolve = services.candidate_approve if approve else services.candidate_reject
        try:
            resolve(project=candidate.project, candidate=candidate, by=operator_name(request))
        except DomainError as exc:
            self.message_user(request, f"{candidate}: {exc.message}", messages.ERROR)
            return False
        return True

    def _resolve(self, request: HttpRequest, queryset: QuerySet[MemoryCandidate], approve: bool
                 ) -> None:
        done = sum(
            self._resolve_one(request, candidate, approve)
            for candidate in queryset.select_related("project")
        )
        verb = "Approved" if approve else "Rejected"
        self.message_user(request, f"{verb} {done} candidate(s).", messages.SUCCESS)

    @admin.action(description="Approve selected candidates (creates memory entries)",
                  permissions=["approve"])
    def approve_candidates(self, request: HttpRequest, queryset: QuerySet[MemoryCandidate]
                           ) -> None:
        self._resolve(request, queryset, approve=True)

    @admin.action(description="Reject selected candidates", permissions=["reject"])
    def reject_candidates(self, request: HttpRequest, queryset: QuerySet[MemoryCandidate]
                          ) -> None:
        self._resolve(request, queryset, approve=False)

    # --- the buttons on the candidate's own page --------------------------------------

    def get_urls(self) -> list[Any]:
        return [
            post_only_url(self, "approve", self.approve_view),
            post_only_url(self, "reject", self.reject_view),
            *super().get_urls(),
        ]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        candidate = self.get_object(request, unquote(object_id))
        context = {
            "can_approve": self.has_approve_permission(request),
            "can_reject": self.has_reject_permission(request),
            # The review gate's reason in place of buttons it would refuse.
            "review_refusal": candidate and services.candidate_refusal(
                candidate=candidate, by=operator_name(request), action=services.APPROVE),
            **(extra_context or {}),
        }
        return super().change_view(request, object_id, form_url, context)

    def approve_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._decision_view(request, object_id, approve=True)

    def reject_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._decision_view(request, object_id, approve=False)

    def _decision_view(self, request: HttpRequest, object_id: str, approve: bool
                       ) -> HttpResponse:
        allowed = (self.has_approve_permission if approve else self.has_reject_permission)(request)
        if not allowed:
            raise PermissionDenied
        candidate = self.get_object(request, unquote(object_id))
        if candidate is None:  # missing, or another project's
            raise Http404
        if self._resolve_one(request, candidate, approve):
            verb = "Approved: it is now a memory entry" if approve else "Rejected"
            self.message_user(request, f"{candidate}: {verb}.", messages.SUCCESS)
        return HttpResponseRedirect(
            reverse("admin:memory_memorycandidate_change", args=[candidate.pk])
        )


class CurrentRevisionFilter(admin.SimpleListFilter):
    title = "revision"
    parameter_name = "current"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Current revision only")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[DocumentRevision]
                 ) -> QuerySet[DocumentRevision]:
        if self.value() == "yes":
            # The admin's queryset comes from DocumentRevision.objects.
            return cast("DocumentRevisionQuerySet", queryset).current()
        return queryset


@admin.register(DocumentRevision)
class DocumentRevisionAdmin(ReadOnlyAdmin):
    """Durable documents and every revision of them; written only through the API."""

    list_display = ["project", "path", "revision", "author", "created_at", "reason"]
    list_filter = [CurrentRevisionFilter, ("project", ProjectFilter)]
    list_select_related = ["project"]
    search_fields = ["path", "author", "sha256"]
    ordering = ["project_id", "path", "-revision"]
    fields = ["project", "path", "revision", "sha256", "author", "created_at", "reason",
              "content"]


@admin.register(ProjectQuota)
class ProjectQuotaAdmin(ProjectScopedAdmin):
    """Storage used per project and kind; operators raise or lower the limit (docs/admin.md).

    Only ``limit_mib`` is editable, and saving writes only that column:
    used_bytes moves under concurrent writes (memory.quotas.quota_charge),
    and the form's copy of it would be stale.
    """

    list_display = ["project", "kind", "used", "limit", "percent_used"]
    list_filter = ["kind", ("project", ProjectFilter)]
    list_select_related = ["project"]
    search_fields = ["project__id"]
    fields = ["project", "kind", "used", "limit_mib", "default_limit"]
    readonly_fields = ["project", "kind", "used", "default_limit"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # one row per project and kind, made by the project or its first write

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # deleting would forget the usage of rows that stay stored

    @admin.display(description="used")
    def used(self, obj: ProjectQuota) -> str:
        text = quotas.human_bytes(obj.used_bytes)
        return text if obj.used_bytes < 1024 else f"{text} ({obj.used_bytes:,} bytes)"

    @admin.display(description="limit")
    def limit(self, obj: ProjectQuota) -> str:
        text = quotas.human_bytes(quotas.limit_bytes(obj))
        return text if obj.limit_mib else f"{text} (default)"

    @admin.display(description="default limit")
    def default_limit(self, obj: ProjectQuota) -> str:
        return f"{quotas.default_limit_mib(obj.kind):,} MiB (GEDWEB_QUOTA_{obj.kind.upper()}_MIB)"

    @admin.display(description="% used")
    def percent_used(self, obj: ProjectQuota) -> str:
        return f"{100 * obj.used_bytes / quotas.limit_bytes(obj):.1f}%"

    def save_model(self, request: HttpRequest, obj: ProjectQuota, form: Any, change: bool
                   ) -> None:
        obj.save(update_fields=["limit_mib"])


class AllowedSecretForm(AllowedSecretFormBase):
    """Project, fingerprint and reason; who and when come from the request and the clock.

    The values' rules are the service's (memory.secret_scan), checked here so
    a bad fingerprint or a blank reason is the form's error, not a lost save.
    """

    class Meta:
        model = AllowedSecret
        fields = ["project", "fingerprint", "reason"]

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        for field, rule in (("fingerprint", secret_scan.validate_fingerprint),
                            ("reason", secret_scan.validate_allow_reason)):
            value = cleaned.get(field)
            if value is not None:
                try:
                    rule(value)
                except ValidationError as exc:
                    self.add_error(field, exc.messages)
        return cleaned


@admin.register(AllowedSecret)
class AllowedSecretAdmin(ProjectScopedAdmin):
    """Allowed secret findings (docs/security.md): added once, then read-only (append-only)."""

    form = AllowedSecretForm
    list_display = ["project", "fingerprint", "allowed_by", "created_at", "reason_short"]
    list_filter = [("project", ProjectFilter)]
    list_select_related = ["project"]
    search_fields = ["project__id", "fingerprint", "allowed_by"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> _FieldGroups:
        if obj is None:
            return ["project", "fingerprint", "reason"]
        return ["project", "fingerprint", "reason", "allowed_by", "created_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return []
        return ["project", "fingerprint", "reason", "allowed_by", "created_at"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # append-only: who allowed what stays on record

    @admin.display(description="reason")
    def reason_short(self, obj: AllowedSecret) -> str:
        return Truncator(obj.reason).chars(80)

    def save_model(self, request: HttpRequest, obj: AllowedSecret, form: Any, change: bool
                   ) -> None:
        if change:
            return
        try:
            record = secret_scan.secret_allow(project=obj.project, fingerprint=obj.fingerprint,
                                              reason=obj.reason, by=operator_name(request))
        except (DomainError, ValidationError) as exc:
            # The form checked the values; this is a second allowance racing this one.
            messages.error(request, str(getattr(exc, "message", exc)))
            return
        obj.pk = record.pk
        obj._state.adding = False

    def response_add(self, request: HttpRequest, obj: AllowedSecret,
                     post_url_continue: Any = None) -> HttpResponse:
        if obj.pk is None:  # the lost race above: nothing was recorded
            return HttpResponseRedirect(reverse("admin:memory_allowedsecret_changelist"))
        return super().response_add(request, obj, post_url_continue)


@admin.register(SecretFinding)
class SecretFindingAdmin(ReadOnlyAdmin):
    """What the last `manage.py memory scan` found in stored text; never the secret itself.

    Each finding links to its redaction (memory.redaction.finding_redact): a
    confirmation page that says what will change and asks why; submitting
    it (CSRF-checked, the redact permission checked again) redacts an
    entry's content, or cuts the secret out of any other stored text.
    """

    list_display = ["project", "source", "where", "field", "kind", "line", "column", "rule",
                    "allowed", "found_at", "redaction"]
    list_filter = ["allowed", "source", ("project", ProjectFilter), "rule_origin"]
    list_select_related = ["project"]
    search_fields = ["fingerprint", "kind", "field"]
    ordering = ["project_id", "source", "id"]

    @admin.display(description="row")
    def where(self, obj: SecretFinding) -> str:
        return obj.where()

    @admin.display(description="rule")
    def rule(self, obj: SecretFinding) -> str:
        return f"{obj.rule_origin} {obj.rule_version}"

    @admin.display(description="redaction")
    def redaction(self, obj: SecretFinding) -> str:
        if not redaction.redactable(obj):
            return format_html("none: {}", redaction.why_not_redactable(obj))
        url = reverse("admin:memory_secretfinding_redact", args=[obj.pk])
        what = (f"entry {obj.seq}" if obj.source == "entry"
                else f"{obj.source.replace('_', ' ')} {obj.field}")
        return format_html('<a href="{}">redact {}</a>', url, what)

    def get_urls(self) -> list[URLPattern]:
        redact = path("<path:object_id>/redact/",
                      self.admin_site.admin_view(self.redact_view),
                      name="memory_secretfinding_redact")
        return [redact, *super().get_urls()]

    def redact_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Confirm, then redact what the finding found (memory.redaction.finding_redact)."""
        if not request.user.has_perm("memory.redact_memoryentry"):
            raise PermissionDenied
        finding = self.get_object(request, unquote(object_id))
        if finding is None or not redaction.redactable(finding):
            raise Http404("no finding with a redaction")
        reason = request.POST.get("reason", f"{finding.kind} found by memory scan")
        if request.method == "POST" and request.POST.get("confirm") == "yes":
            try:
                redaction.finding_redact(finding_id=finding.pk, reason=reason,
                                         by=operator_name(request))
            except DomainError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            except ValidationError as exc:
                self.message_user(request, validation_error_line(exc), messages.ERROR)
            else:
                self.message_user(request, f"Redacted the {finding.kind} in {finding.source} "
                                  f"{finding.where()} ({finding.field}).", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:memory_secretfinding_changelist"))
        return TemplateResponse(request, "admin/memory/secretfinding/redact.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta,
            "finding": finding, "reason": reason, "by": operator_name(request),
            "title": "Redact a secret",
        })


@admin.register(TextRedaction)
class TextRedactionAdmin(ReadOnlyAdmin):
    """The secrets cut out of stored texts: who, when, why and where (append-only, signed)."""

    list_display = ["project", "source", "where", "field", "kind", "redacted_by", "reason",
                    "created_at"]
    list_filter = ["source", ("project", ProjectFilter)]
    list_select_related = ["project"]
    search_fields = ["fingerprint", "kind", "redacted_by"]
    ordering = ["project_id", "-id"]

    @admin.display(description="row")
    def where(self, obj: TextRedaction) -> str:
        return " ".join(f"{key} {value}" for key, value in obj.row.items())
