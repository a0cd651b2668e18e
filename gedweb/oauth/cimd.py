"""Fetching client ID metadata documents: the toolkit's SSRF-hardened fetcher, and a test door.

django-oauth-toolkit's SafeMetadataFetcher fetches a client_id URL over https
only, from public addresses only (every resolved address checked, the
connection made to the checked one), without redirects, within
CIMD_FETCH_TIMEOUT_SECONDS and CIMD_MAX_DOCUMENT_SIZE; the toolkit then
refuses a document whose ``client_id`` is not the URL it came from. That is
the fetcher in production and by default.

A test suite cannot serve a document from a public https host. With
GEDWEB_OAUTH_CIMD_LOOPBACK_CA set (tests only; refused in production,
gedweb/settings.py), a client_id URL on a loopback address is fetched from
there, over https still, trusting the certificates of that CA file alone.
Every other URL takes the toolkit's path unchanged.
"""

from __future__ import annotations

import ipaddress
import ssl
from typing import Any

import urllib3
from django.conf import settings
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher, _validate_client_id_url
from oauth2_provider.settings import oauth2_settings


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class MetadataFetcher(SafeMetadataFetcher):  # type: ignore[misc]  # the toolkit is untyped
    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        ca_file = settings.OAUTH_CIMD_LOOPBACK_CA
        parsed = _validate_client_id_url(client_id)
        if ca_file is None or not _is_loopback(parsed.hostname or ""):
            result: tuple[dict[str, Any], int] = super().fetch(client_id)
            return result
        timeout = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        pool = urllib3.HTTPSConnectionPool(
            host=parsed.hostname, port=parsed.port or 443, retries=False, maxsize=1,
            timeout=urllib3.Timeout(connect=timeout, read=timeout, total=timeout),
            ssl_context=ssl.create_default_context(cafile=ca_file),
        )
        path = parsed.path + (f"?{parsed.query}" if parsed.query else "")
        try:
            response = pool.urlopen("GET", path, redirect=False, preload_content=False,
                                    headers={"Accept": "application/json"})
            try:
                document: tuple[dict[str, Any], int] = self._read_document(response)
                return document
            finally:
                response.release_conn()
        except urllib3.exceptions.HTTPError as exc:
            raise CIMDError(f"could not fetch client_id document: {exc}") from exc
        finally:
            pool.close()
