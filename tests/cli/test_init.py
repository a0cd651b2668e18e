"""`gedweb init claude-code|codex|cursor`: the files written, byte for byte.

The expected trees are in init_files.json (kept as JSON so that no agent
reading this repository takes them for its own configuration): ``empty``,
what init writes into an empty repository, and ``existing``, a repository
with settings of its own before and after. A second run writes nothing; a
different GedWeb entry is refused, nothing written, unless --force;
--dry-run writes nothing; no token reaches any file.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import GEDWEB

EXPECTED = json.loads((Path(__file__).with_name("init_files.json")).read_text())
AGENTS = ("claude-code", "codex", "cursor")
URL = "https://gedweb.example.org"
TOKEN = "gwp_" + "T0kenValue" * 4
MEMORY_TOKEN = "memory-" + "W" * 40


def init(root: Path, agent: str, *extra: str, url: str = URL + "/",
         project: str = "shop") -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "GEDWEB_TOKEN": TOKEN, "GEDWEB_MEMORY_TOKEN": MEMORY_TOKEN}
    return subprocess.run([str(GEDWEB), "init", agent, str(root), "--project", project,
                           "--url", url, "--token", TOKEN, *extra], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def tree(root: Path) -> dict[str, str]:
    return {str(path.relative_to(root)): path.read_text() for path in sorted(root.rglob("*"))
            if path.is_file()}


def lay(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)


def stamps(root: Path) -> dict[str, int]:
    return {str(path.relative_to(root)): path.stat().st_mtime_ns for path in root.rglob("*")
            if path.is_file()}


@pytest.mark.parametrize("agent", AGENTS)
def test_init_into_an_empty_repository_writes_the_expected_files(agent, tmp_path):
    done = init(tmp_path, agent)
    assert done.returncode == 0, done.stderr
    assert tree(tmp_path) == EXPECTED["empty"][agent]
    assert [line.split(" ", 1)[0] for line in done.stdout.splitlines()[:-1]] == \
        ["created"] * len(EXPECTED["empty"][agent])
    assert done.stdout.splitlines()[-1].startswith("no token was written")


@pytest.mark.parametrize("agent", AGENTS)
def test_init_merges_into_existing_settings_keeping_every_key(agent, tmp_path):
    lay(tmp_path, EXPECTED["existing"][agent]["before"])
    done = init(tmp_path, agent)
    assert done.returncode == 0, done.stderr
    assert tree(tmp_path) == EXPECTED["existing"][agent]["after"]


def test_the_merge_keeps_what_was_there_in_each_format(tmp_path):
    for agent in AGENTS:
        lay(tmp_path / agent, EXPECTED["existing"][agent]["before"])
        assert init(tmp_path / agent, agent).returncode == 0
    claude = tmp_path / "claude-code"
    settings = json.loads((claude / ".claude/settings.json").read_text())
    before = json.loads(EXPECTED["existing"]["claude-code"]["before"][".claude/settings.json"])
    assert settings["permissions"] == before["permissions"] and settings["env"] == before["env"]
    assert settings["hooks"]["PostToolUse"] == before["hooks"]["PostToolUse"]
    assert settings["hooks"]["UserPromptSubmit"][0] == before["hooks"]["UserPromptSubmit"][0]
    mcp = json.loads((claude / ".mcp.json").read_text())["mcpServers"]
    assert set(mcp) == {"docs", "gedweb"}
    assert (claude / "CLAUDE.md").read_text().startswith("# Shop\n\nRun `make test`")
    codex = (tmp_path / "codex/.codex/config.toml").read_text()
    assert "# Codex settings for this repository" in codex
    assert "# pinned in package.json" in codex
    parsed = tomllib.loads(codex)
    assert parsed["model"] == "gpt-5-codex"
    assert parsed["profiles"] == {"review": {"model_reasoning_effort": "high"}}
    assert parsed["mcp_servers"]["gedweb"] == {
        "url": URL + "/mcp", "bearer_token_env_var": "GEDWEB_TOKEN",
        "env_http_headers": {"X-Memory-Token": "GEDWEB_MEMORY_TOKEN"},
        "http_headers": {"X-GedWeb-Project": "shop"}}
    cursor = json.loads((tmp_path / "cursor/.cursor/mcp.json").read_text())["mcpServers"]
    assert cursor["linear"] == {"url": "https://mcp.linear.app/sse"}


@pytest.mark.parametrize("case", ["empty", "existing"])
@pytest.mark.parametrize("agent", AGENTS)
def test_a_second_run_changes_nothing(agent, case, tmp_path):
    if case == "existing":
        lay(tmp_path, EXPECTED["existing"][agent]["before"])
    assert init(tmp_path, agent).returncode == 0
    written, times = tree(tmp_path), stamps(tmp_path)
    again = init(tmp_path, agent)
    assert again.returncode == 0, again.stderr
    assert tree(tmp_path) == written
    assert stamps(tmp_path) == times  # not even rewritten with the same bytes
    assert all(line.startswith("unchanged ") for line in again.stdout.splitlines()[:-1])


@pytest.mark.parametrize("agent", AGENTS)
def test_dry_run_shows_the_change_and_writes_nothing(agent, tmp_path):
    lay(tmp_path, EXPECTED["existing"][agent]["before"])
    before = tree(tmp_path)
    done = init(tmp_path, agent, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert tree(tmp_path) == before
    after = EXPECTED["existing"][agent]["after"]
    changed = [relative for relative in after if before.get(relative) != after[relative]]
    assert changed
    for relative in changed:
        action = "would update" if relative in before else "would create"
        assert f"{action} {relative}\n" in done.stdout
        # The diff of each file is there, with the lines the run would add.
        assert f"--- a/{relative}\n+++ b/{relative}\n" in done.stdout
        added = set(after[relative].splitlines()) - set(before.get(relative, "").splitlines())
        for line in added:
            assert f"+{line}\n" in done.stdout


def _edit(root: Path, relative: str, old: str, new: str) -> None:
    path = root / relative
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("agent, relative, old, new", [
    ("claude-code", ".mcp.json", "${GEDWEB_URL:-https://gedweb.example.org}/mcp",
     "https://old.example.org/mcp"),
    ("claude-code", ".claude/settings.json", "gedweb hook prompt --project shop",
     "gedweb hook prompt --project old"),
    ("claude-code", "CLAUDE.md", "Use its tools:", "Use the tools:"),
    ("codex", ".codex/config.toml", 'bearer_token_env_var = "GEDWEB_TOKEN"',
     'bearer_token_env_var = "OLD_TOKEN"'),
    ("codex", "AGENTS.md", "## GedWeb: this project's memory", "## GedWeb memory"),
    ("cursor", ".cursor/mcp.json", "Bearer ${env:GEDWEB_TOKEN}", "Bearer ${env:OLD}"),
    ("cursor", ".cursor/rules/gedweb.mdc", "alwaysApply: true", "alwaysApply: false"),
])
def test_a_different_gedweb_entry_is_refused_unless_forced(agent, relative, old, new,
                                                           tmp_path):
    assert init(tmp_path, agent).returncode == 0
    _edit(tmp_path, relative, old, new)
    (tmp_path / "extra.txt").write_text("mine")
    changed = tree(tmp_path)
    refused = init(tmp_path, agent)
    assert refused.returncode == 1
    assert relative in refused.stderr and "nothing written" in refused.stderr
    assert refused.stdout == ""
    assert tree(tmp_path) == changed
    forced = init(tmp_path, agent, "--force")
    assert forced.returncode == 0, forced.stderr
    assert f"updated {relative}\n" in forced.stdout
    assert tree(tmp_path) == {**EXPECTED["empty"][agent], "extra.txt": "mine"}


def test_a_refusal_writes_no_file_at_all(tmp_path):
    # .mcp.json would be fine; the conflict in CLAUDE.md stops every file.
    lay(tmp_path, {"CLAUDE.md": "<!-- gedweb:begin (written by `gedweb init`; --force "
                                "rewrites it) -->\nold\n<!-- gedweb:end -->\n"})
    done = init(tmp_path, "claude-code")
    assert done.returncode == 1
    assert sorted(tree(tmp_path)) == ["CLAUDE.md"]


@pytest.mark.parametrize("files, message", [
    ({".mcp.json": "{not json"}, ".mcp.json is not valid JSON"),
    ({".mcp.json": "[1, 2]"}, ".mcp.json is not a JSON object"),
    ({".mcp.json": '{"mcpServers": []}'}, "'mcpServers' is not an object"),
    ({".claude/settings.json": '{"hooks": {"SessionStart": {}}}'},
     "hooks.SessionStart is not a list"),
    ({"CLAUDE.md": "<!-- gedweb:begin (written by `gedweb init`; --force rewrites it) -->\n"},
     "has no end marker"),
])
def test_a_file_init_cannot_merge_into_is_refused_and_nothing_written(files, message,
                                                                       tmp_path):
    lay(tmp_path, files)
    done = init(tmp_path, "claude-code", "--force")
    assert done.returncode == 1
    assert message in done.stderr
    assert tree(tmp_path) == files


def test_bad_toml_is_refused(tmp_path):
    lay(tmp_path, {".codex/config.toml": "model = \n"})
    done = init(tmp_path, "codex")
    assert done.returncode == 1 and "is not valid TOML" in done.stderr
    assert tree(tmp_path) == {".codex/config.toml": "model = \n"}


@pytest.mark.parametrize("agent", AGENTS)
def test_nothing_written_holds_a_token(agent, tmp_path):
    lay(tmp_path, EXPECTED["existing"][agent]["before"])
    assert init(tmp_path, agent).returncode == 0
    for text in tree(tmp_path).values():
        assert TOKEN not in text and MEMORY_TOKEN not in text and "gwp_" not in text


@pytest.mark.parametrize("url", ["https://user:secret@gedweb.example.org",
                                 "https://gedweb.example.org/?token=x", "ftp://example.org"])
def test_a_url_with_a_credential_or_not_http_is_refused(url, tmp_path):
    done = init(tmp_path, "claude-code", url=url)
    assert done.returncode == 2
    assert "secret" not in done.stderr
    assert tree(tmp_path) == {}


@pytest.mark.parametrize("project", ["Shop", "-shop", "a b", ""])
def test_a_bad_project_id_is_a_usage_error(project, tmp_path):
    done = init(tmp_path, "cursor", project=project)
    assert done.returncode == 2
    assert tree(tmp_path) == {}


def test_an_unknown_agent_is_a_usage_error(tmp_path):
    done = init(tmp_path, "vim")
    assert done.returncode == 2
    assert tree(tmp_path) == {}


def test_the_claude_hooks_run_gedweb_with_the_documented_matchers(tmp_path):
    assert init(tmp_path, "claude-code").returncode == 0
    hooks: dict[str, Any] = json.loads((tmp_path / ".claude/settings.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "SessionEnd"}
    assert hooks["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    commands = {event: groups[0]["hooks"][0]["command"] for event, groups in hooks.items()}
    assert commands == {
        event: f'gedweb hook {name} --project shop --url "${{GEDWEB_URL:-{URL}}}"'
        for event, name in (("SessionStart", "session-start"), ("UserPromptSubmit", "prompt"),
                            ("SessionEnd", "session-end"))}
