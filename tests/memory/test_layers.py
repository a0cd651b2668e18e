"""Memory's faces name only memory (issue 17 §1).

import-linter keeps memory's modules from importing governance
(pyproject.toml); these tests catch the two ways around it that imports
do not show: a template under templates/memory/ reversing a governance URL,
and memory's code following a relation that governance's models add to
memory's (``project.work_items``). A page that needs both apps is the
site's (gedweb/pages.py, templates/project_overview.html).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from django.apps import apps
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
MEMORY_TEMPLATES = ROOT / "templates" / "memory"
MEMORY_CODE = ROOT / "memory"

# Any template tag ({% url %}, {% include %}, {% extends %}, ...) that names
# a governance namespace or template.
GOVERNANCE_IN_TAG = re.compile(r"{%[^%]*?\bgovernance[\w-]*[:/][^%]*%}")


def memory_templates() -> list[Path]:
    return sorted(MEMORY_TEMPLATES.rglob("*.html"))


def memory_sources() -> list[Path]:
    return sorted(path for path in MEMORY_CODE.rglob("*.py") if "migrations" not in path.parts)


def governance_relations() -> set[str]:
    """The names a governance model's relation adds to memory's models, both ways of use."""
    names: set[str] = set()
    for model in apps.get_app_config("governance").get_models():
        for field in model._meta.get_fields():
            remote = getattr(field, "remote_field", None)
            if not (field.concrete and remote and field.related_model is not None):
                continue
            if field.related_model._meta.app_label != "memory" or remote.hidden:
                continue
            names.add(remote.get_accessor_name())  # project.work_items
            names.add(field.related_query_name())  # Project.objects.filter(work_items__...)
    return names


# ORM calls whose string arguments name a relation: Count("work_items"),
# prefetch_related("work_items"), F("work_items"), values("work_items"), ...
ORM_CALLS = {
    "select_related", "prefetch_related", "Prefetch", "values", "values_list", "only",
    "defer", "order_by", "annotate", "aggregate", "F", "Count", "Sum", "Max", "Min", "Avg",
    "OuterRef",
}


def code_uses(source: str, relations: set[str]) -> set[str]:
    """The relations a module follows: ``project.work_items``, ``"work_items__count"``,
    ``Count("work_items")``, ``filter(work_items__state=...)``; comments and prose aside."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in relations:
            found.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg is not None:
            found.update(name for name in relations if node.arg.startswith(f"{name}__"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(name for name in relations if node.value.startswith(f"{name}__"))
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ORM_CALLS:
                found.update(
                    arg.value for arg in node.args
                    if isinstance(arg, ast.Constant) and arg.value in relations
                )
    return found


def template_uses(source: str, relations: set[str]) -> set[str]:
    tags = " ".join(re.findall(r"{{.*?}}|{%.*?%}", source, flags=re.DOTALL))
    return {name for name in relations if re.search(rf"\.{name}\b", tags)}


def test_the_templates_and_the_code_are_there_to_check():
    assert len(memory_templates()) >= 5
    assert MEMORY_CODE / "views.py" in memory_sources()
    # Governance relates to memory through these, among others; if the
    # lookup found none, the test below would check nothing.
    assert {"work_items", "standards_imports"} & governance_relations()


def test_no_memory_template_names_governance():
    found = [
        f"{path.relative_to(ROOT)}: {tag}"
        for path in memory_templates()
        for tag in GOVERNANCE_IN_TAG.findall(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_no_memory_code_or_template_follows_a_governance_relation():
    relations = governance_relations()
    found = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in memory_sources()
        for name in sorted(code_uses(path.read_text(encoding="utf-8"), relations))
    ] + [
        f"{path.relative_to(ROOT)}: {name}"
        for path in memory_templates()
        for name in sorted(template_uses(path.read_text(encoding="utf-8"), relations))
    ]
    assert found == []


def test_the_checks_find_what_the_overview_once_did():
    # What memory/views.py and templates/memory/overview.html held before
    # the overview became the site's page: each check must catch it.
    relations = governance_relations()
    assert GOVERNANCE_IN_TAG.search(
        """<a href="{% url 'governance:work-list' project.id %}">{{ work_count }}</a>"""
    )
    assert GOVERNANCE_IN_TAG.search('{% include "governance/work_list.html" %}')
    assert code_uses("work_count = project.work_items.count()\n", relations) == {"work_items"}
    assert code_uses('Project.objects.annotate(n=Count("work_items"))', relations) == {
        "work_items"
    }
    assert code_uses("Project.objects.filter(work_items__work_id=w)", relations) == {
        "work_items"
    }
    assert template_uses("<dd>{{ project.work_items.count }}</dd>", relations) == {"work_items"}
    # Prose and other strings may name them; only relation lookups count.
    assert code_uses('"""Skills and work_items belong to governance."""\n', relations) == set()
    assert code_uses('SKILLS = "skills", "skills"\n', relations) == set()
    assert template_uses("<p>project.work_items</p>", relations) == set()
    assert not GOVERNANCE_IN_TAG.search("""{% url 'memory:document-list' project.id %}""")
