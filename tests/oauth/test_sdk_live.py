"""The official MCP SDK connects to /mcp by URL with no token in hand (issue 38's test).

The SDK's OAuthClientProvider gets a 401, discovers the protected resource and
the authorization server, registers (dynamic client registration, or a client
ID metadata document served over https by the test), runs PKCE; a headless
chromium logs in on the team login page and consents; then the SDK lists the
tools and adds a memory entry, whose author names the person and the client.
The requests the client sent are printed (pytest -s) and their order asserted.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from tests.browser import ARGS, CHROMIUM, require_browser
from tests.live_server import free_port
from tests.oauth.conftest import PROJECT, OAuthSite
from tests.oauth.support import PASSWORD

require_browser()

pytestmark = [pytest.mark.live_server, pytest.mark.browser, pytest.mark.timeout(300)]


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def connect_and_write(site: OAuthSite, *, client_name: str, content: str,
                      client_metadata_url: str | None = None) -> dict[str, Any]:
    """Run the SDK against /mcp with a browser consenting; what the client saw."""
    from playwright.async_api import async_playwright

    callback_port = free_port()
    callback = f"http://127.0.0.1:{callback_port}/callback"
    seen: list[str] = []
    storage = MemoryStorage()

    async def main() -> dict[str, Any]:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            page = await browser.new_page()
            arrived: asyncio.Future[str] = asyncio.get_running_loop().create_future()

            async def callback_route(route: Any) -> None:
                if not arrived.done():
                    arrived.set_result(route.request.url)
                await route.fulfill(status=200, body="You may close this window.")

            await page.route(f"http://127.0.0.1:{callback_port}/**", callback_route)

            async def redirect_handler(url: str) -> None:
                seen.append(f"BROWSER GET {url.split('?')[0]}?…")
                await page.goto(url)
                await page.fill("#id_username", "alice")
                await page.fill("#id_password", PASSWORD)
                await page.click("button[type=submit]")
                await page.wait_for_selector("#id_project")
                seen.append(f"BROWSER consent page: {await page.title()}")
                await page.select_option("#id_project", PROJECT)
                await page.check("input[name=memory_scope][value='memory:write']")
                await page.fill("#id_memory_token", site.server.memory_token)
                await page.click("button[name=allow]")

            async def callback_handler() -> AuthorizationCodeResult:
                url = await asyncio.wait_for(arrived, 60)
                seen.append(f"BROWSER redirected to {url.split('?')[0]}?code=…&state=…")
                query = parse_qs(urlsplit(url).query)
                return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

            provider = OAuthClientProvider(
                server_url=site.mcp,
                client_metadata=OAuthClientMetadata(
                    client_name=client_name, redirect_uris=[callback],  # type: ignore[list-item]
                    grant_types=["authorization_code", "refresh_token"],
                    response_types=["code"]),
                storage=storage, redirect_handler=redirect_handler,
                callback_handler=callback_handler, client_metadata_url=client_metadata_url)

            async def on_response(response: httpx2.Response) -> None:
                request = response.request
                seen.append(f"{request.method} {request.url.copy_with(query=None)} -> "
                            f"{response.status_code}")

            async with create_mcp_http_client(auth=provider) as http:
                http.event_hooks = {"request": [], "response": [on_response]}
                async with streamable_http_client(site.mcp, http_client=http) as (read, write):
                    async with ClientSession(read, write, read_timeout_seconds=60) as session:
                        await session.initialize()
                        tools = [tool.name for tool in (await session.list_tools()).tools]
                        added = await session.call_tool(
                            "memory_add", {"category": "decision", "content": content})
            await browser.close()
            return {"tools": tools, "added": added, "seen": seen, "storage": storage}

    return asyncio.run(asyncio.wait_for(main(), timeout=240))


def assert_the_flow(seen: list[str], site: OAuthSite, *, registers: bool) -> None:
    print("\n".join(seen))
    text = "\n".join(seen)
    order = [f"POST {site.mcp} -> 401",
             f"GET {site.base}/.well-known/oauth-protected-resource/mcp -> 200",
             f"GET {site.base}/.well-known/oauth-authorization-server -> 200"]
    if registers:
        order.append(f"POST {site.base}/oauth/register/ -> 201")
    order += ["BROWSER consent page", "BROWSER redirected to",
              f"POST {site.base}/oauth/token/ -> 200", f"POST {site.mcp} -> 200"]
    positions = [text.find(step) for step in order]
    assert all(p >= 0 for p in positions), (order, text)
    assert positions == sorted(positions), text


def test_the_sdk_registers_dynamically_consents_in_a_browser_and_writes(
        site: OAuthSite) -> None:
    outcome = connect_and_write(site, client_name="SDK test client",
                                content="added by the SDK after DCR")
    assert_the_flow(outcome["seen"], site, registers=True)
    assert "memory_add" in outcome["tools"] and "memory_list" in outcome["tools"]
    assert outcome["added"].is_error is False, outcome["added"]
    assert outcome["storage"].tokens.scope == f"memory:write project:{PROJECT}"
    rows = site.server.sql("SELECT author FROM memory_memoryentry WHERE content = %s",
                           ("added by the SDK after DCR",))
    assert rows == [("user:alice via SDK test client",)]


def test_the_sdk_uses_a_client_id_metadata_document_and_writes(site: OAuthSite) -> None:
    url = site.documents.url("sdk-client.json")
    # The SDK's callback listens on a port chosen when it starts; a loopback
    # redirect matches on any port (RFC 8252 7.3), so the document names port 1.
    site.documents.put("sdk-client.json", {
        "client_id": url, "client_name": "CIMD SDK client",
        "redirect_uris": ["http://127.0.0.1:1/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none"})
    outcome = connect_and_write(site, client_name="ignored: the document names the client",
                                content="added by the SDK with a metadata document",
                                client_metadata_url=url)
    assert_the_flow(outcome["seen"], site, registers=False)
    assert not any("/oauth/register/" in line for line in outcome["seen"])
    assert "/sdk-client.json" in site.documents.fetched
    assert outcome["added"].is_error is False, outcome["added"]
    rows = site.server.sql("SELECT author FROM memory_memoryentry WHERE content = %s",
                           ("added by the SDK with a metadata document",))
    assert rows == [("user:alice via CIMD SDK client",)]
