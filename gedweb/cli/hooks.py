"""`gedweb hook session-start|prompt|session-end`: memory in and out of an agent's session.

Claude Code runs these as command hooks (docs/agents.md, "Hooks"): each
reads the hook's JSON on stdin and, for the two that bring memory in,
prints the JSON Claude Code reads, ``{"hookSpecificOutput": {"hookEventName",
"additionalContext"}}``.

- ``session-start`` (SessionStart; ``source`` startup, resume, clear or
  compact): the project's framed context bundle (GET /context).
- ``prompt`` (UserPromptSubmit): the entries recalled for the prompt that
  are relevant enough, framed as data (GET /context?only=recalled); nothing
  at all when none is (the server answers 204).
- ``session-end`` (SessionEnd): proposes the handoff the agent left, in the
  file the instructions block names or in ``GEDWEB_HANDOFF``, as a review
  candidate; never one it made up.

They fail open. Whatever goes wrong (the server slow, down or refusing, bad
input, a bad option) they exit 0 within the deadline (``GEDWEB_HOOK_DEADLINE``
seconds, default 2) with nothing on stdout and one line on stderr, which
names no token: an exit 2 would make Claude Code block the user's prompt.
Each delivery is logged by the server with the session id (``session``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote_plus

from gedweb.cli.client import ApiError, Client, NetworkError

EVENTS = ("session-start", "prompt", "session-end")
# Where an agent leaves a handoff for session-end (the instructions block
# that `gedweb init` writes names it; docs/agents.md).
HANDOFF_FILE = ".gedweb/handoff.md"
DEFAULT_DEADLINE = 2.0
# Kept back from the deadline for leaving: flushing and the exit itself.
EXIT_MARGIN = 0.1
DEADLINE_VARIABLE = "GEDWEB_HOOK_DEADLINE"
HANDOFF_VARIABLE = "GEDWEB_HANDOFF"
# GET /context's task is at most 1,000 characters; recall's model reads
# about that much of a text anyway (256 tokens).
MAX_TASK_CHARS = 1_000
# The task travels in the request line, which gunicorn.conf.py caps at 8,190
# bytes: 1,000 characters of CJK text would be 9,000 once percent-encoded.
MAX_TASK_QUERY_BYTES = 6_000
DEFAULT_PROMPT_BUDGET = 500
MAX_INPUT_BYTES = 1 << 20
# A memory entry's content is at most 32,000 UTF-8 bytes (the contract).
MAX_HANDOFF_BYTES = 32_000
HANDOFF_CATEGORY = "handoff"
HANDOFF_SOURCE = "gedweb hook session-end"
HOOK_EVENT_NAMES = {"session-start": "SessionStart", "prompt": "UserPromptSubmit"}


class HookProblem(Exception):
    """Why a hook gives nothing: the one line it says on stderr."""


def process_started() -> float:
    """When this process started, on time.monotonic()'s clock.

    The deadline counts the interpreter's start and the imports too, which
    are a good part of it: on Linux from the process's start time in
    /proc (to a clock tick), elsewhere from now.
    """
    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as stream:
            # Field 22, after the command name in parentheses (which may hold spaces).
            fields = stream.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as stream:
            uptime = float(stream.read().split()[0])
        ticks = os.sysconf("SC_CLK_TCK")
        age = uptime - int(fields[19]) / ticks
    except (OSError, ValueError, IndexError):
        return now
    return now - age if 0 <= age < 60 else now


def deadline_seconds(environ: dict[str, str] | os._Environ[str] = os.environ) -> float:
    """GEDWEB_HOOK_DEADLINE, more than 0 and at most 60; the default for anything else."""
    raw = environ.get(DEADLINE_VARIABLE, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_DEADLINE
    except ValueError:
        return DEFAULT_DEADLINE
    return value if math.isfinite(value) and 0 < value <= 60 else DEFAULT_DEADLINE


def read_input(stream: Any) -> dict[str, Any]:
    raw = stream.read(MAX_INPUT_BYTES + 1)
    if len(raw) > MAX_INPUT_BYTES:
        raise HookProblem("the hook input is larger than 1 MiB")
    try:
        value = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (UnicodeDecodeError, ValueError):
        raise HookProblem("the hook input is not JSON") from None
    if not isinstance(value, dict):
        raise HookProblem("the hook input is not a JSON object")
    return value


# What GET /context takes as a session (governance/api/context.py).
_SESSION = re.compile(r"[\x21-\x7e]{1,128}")


def _session(data: dict[str, Any]) -> str | None:
    """The hook input's session_id, when the delivery log can hold it as it is."""
    session = data.get("session_id")
    return session if isinstance(session, str) and _SESSION.fullmatch(session) else None


def hook_output(event: str, context: str) -> str:
    """The JSON Claude Code reads from a SessionStart or UserPromptSubmit hook."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": HOOK_EVENT_NAMES[event],
                                              "additionalContext": context}},
                      ensure_ascii=False) + "\n"


def session_start(client: Client, project: str, data: dict[str, Any]) -> str | None:
    bundle = client.context(project, session=_session(data))
    return hook_output("session-start", bundle)


def prompt_task(text: str) -> str:
    """The prompt as GET /context's task: its first 1,000 characters, and no more than
    MAX_TASK_QUERY_BYTES once percent-encoded."""
    kept, size = [], 0
    for character in text.strip()[:MAX_TASK_CHARS]:
        size += len(quote_plus(character))
        if size > MAX_TASK_QUERY_BYTES:
            break
        kept.append(character)
    return "".join(kept)


def prompt(client: Client, project: str, data: dict[str, Any], budget: int) -> str | None:
    text = data.get("prompt")
    if not isinstance(text, str) or not text.strip():
        return None  # nothing asked, nothing recalled
    task = prompt_task(text)
    recalled = client.context(project, task=task, budget=budget, session=_session(data),
                              only="recalled")
    return hook_output("prompt", recalled) if recalled else None


def _handoff(data: dict[str, Any], environ: dict[str, str] | os._Environ[str],
             ) -> tuple[str, Path | None] | None:
    """The handoff the agent left, and its file (None for GEDWEB_HANDOFF); None if none."""
    from_environment = environ.get(HANDOFF_VARIABLE, "")
    if from_environment.strip():
        return from_environment, None
    cwd = data.get("cwd")
    root = Path(cwd) if isinstance(cwd, str) and cwd else Path.cwd()
    path = root / HANDOFF_FILE
    if path.is_symlink() or not path.is_file():
        return None
    with open(path, "rb") as stream:
        raw = stream.read(MAX_HANDOFF_BYTES + 1)
    if len(raw) > MAX_HANDOFF_BYTES:
        raise HookProblem(f"{HANDOFF_FILE} is larger than {MAX_HANDOFF_BYTES:,} bytes; "
                          "not proposed")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise HookProblem(f"{HANDOFF_FILE} is not UTF-8 text; not proposed") from None
    return (text, path) if text.strip() else None


def session_end(client: Client, project: str, data: dict[str, Any],
                environ: dict[str, str] | os._Environ[str], say: Callable[[str], None]) -> None:
    found = _handoff(data, environ)
    if found is None:
        return  # the agent left none: nothing is invented
    text, path = found
    session = _session(data)
    content = (f"Handoff from agent session {session}:\n\n{text.strip()}\n" if session
               else text.strip() + "\n")
    if len(content.encode("utf-8")) > MAX_HANDOFF_BYTES:
        raise HookProblem(f"the handoff is larger than {MAX_HANDOFF_BYTES:,} bytes; not proposed")
    # One key per project and text: the hook run twice proposes it once.
    key = "gedweb-handoff-" + hashlib.sha256(f"{project}\0{content}".encode()).hexdigest()[:48]
    candidate = client.candidate_propose(project, HANDOFF_CATEGORY, content, HANDOFF_SOURCE,
                                         idempotency_key=key)
    if path is not None:
        # Moved aside, so the next session's end does not propose it again.
        os.replace(path, path.with_name("handoff.proposed.md"))
    say(f"handoff proposed for review: candidate {candidate.get('id')}")


def run(event: str, *, project: str, url: str, token: str | None, memory_token: str | None,
        budget: int, stdin: Any, stdout: TextIO, complain: Callable[[str], None],
        environ: dict[str, str] | os._Environ[str] = os.environ,
        started: float | None = None) -> int:
    """Run one hook within the deadline; always 0. ``complain`` writes the one stderr line."""
    started = time.monotonic() if started is None else started
    deadline = deadline_seconds(environ)
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            data = read_input(stdin)
            remaining = max(0.05, deadline - (time.monotonic() - started))
            # The plain-http warning joins the hook's one stderr line.
            client = Client(url, token, memory_token, timeout=remaining, max_attempts=1,
                            warn=lambda line: outcome.setdefault("warning", line))
            try:
                if event == "session-start":
                    outcome["output"] = session_start(client, project, data)
                elif event == "prompt":
                    outcome["output"] = prompt(client, project, data, budget)
                else:
                    session_end(client, project, data, environ,
                                lambda line: outcome.setdefault("note", line))
            finally:
                client.close()
        except HookProblem as exc:
            outcome["problem"] = str(exc)
        except ApiError as exc:
            outcome["problem"] = f"the server refused: {exc.one_line()}"
        except NetworkError as exc:
            outcome["problem"] = str(exc)
        except (ValueError, UnicodeDecodeError, OSError) as exc:
            outcome["problem"] = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a hook never blocks the agent
            outcome["problem"] = f"unexpected {type(exc).__name__}: {exc}"

    worker = threading.Thread(target=work, name=f"gedweb-hook-{event}", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - EXIT_MARGIN - (time.monotonic() - started)))
    warning = f" (warning: {outcome['warning']})" if "warning" in outcome else ""
    if worker.is_alive():
        complain(f"hook {event}: no answer within {deadline:g} s; no context given{warning}")
        return 0
    if "problem" in outcome:
        given = "" if event == "session-end" else "; no context given"
        complain(f"hook {event}: {outcome['problem']}{given}{warning}")
        return 0
    if "note" in outcome or warning:
        complain(outcome.get("note", f"hook {event}") + warning)
    if outcome.get("output"):
        stdout.write(outcome["output"])
        stdout.flush()
    return 0


def exit_now(code: int) -> None:
    """Leave at once, even with the request's thread still waiting on the server."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
