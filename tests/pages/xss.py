"""A corpus of script-injection payloads, stored as agent text in the page and browser tests.

Each payload that could run script tries to set window.__xss, so the browser
test can tell "ran" from "did not run" even when no dialog opens.
"""

from __future__ import annotations

MARK = "window.__xss=1"

PAYLOADS = [
    f"<script>{MARK}</script>",
    f"<SCRIPT SRC=data:text/javascript,{MARK}></SCRIPT>",
    f"<img src=x onerror=\"{MARK}\">",
    f"<img src=\"x\" onerror=\"alert(1);{MARK}\">",
    f"<body onload=\"{MARK}\">",
    f"<svg onload=\"{MARK}\"></svg>",
    f"<svg><script>{MARK}</script></svg>",
    f"<svg><style><img src=x onerror=\"{MARK}\"></style></svg>",
    f"<math><mtext><table><mglyph><style><img src=x onerror=\"{MARK}\">",
    f"<noscript><p title=\"</noscript><img src=x onerror={MARK}>\">",
    f"<iframe src=\"javascript:{MARK}\"></iframe>",
    f"<iframe srcdoc=\"<script>parent.{MARK}</script>\"></iframe>",
    f"<object data=\"data:text/html,<script>{MARK}</script>\"></object>",
    f"<embed src=\"javascript:{MARK}\">",
    f"<a href=\"javascript:{MARK}\">click</a>",
    f"<a href=\"JaVaScRiPt:{MARK}\">click</a>",
    f"<a href=\"&#106;avascript:{MARK}\">entity</a>",
    f"<a href=\"&#x6A;&#x61;&#x76;&#x61;&#x73;&#x63;&#x72;&#x69;&#x70;&#x74;&#x3A;{MARK}\">hex</a>",
    f"<a href=\"java\tscript:{MARK}\">tab</a>",
    f"<a href=\" javascript:{MARK}\">space</a>",
    "<a href=\"data:text/html;base64,PHNjcmlwdD53aW5kb3cuX194c3M9MTwvc2NyaXB0Pg==\">data</a>",
    f"<a href=\"vbscript:{MARK}\">vb</a>",
    f"[markdown link](javascript:{MARK})",
    f"[entity link](&#106;avascript:{MARK})",
    f"![image](javascript:{MARK})",
    f"![image](x\" onerror=\"{MARK})",
    f"<a href=\"https://example.org\" onclick=\"{MARK}\">onclick</a>",
    f"<div style=\"background:url(javascript:{MARK})\">style</div>",
    f"<style>@import 'javascript:{MARK}';</style>",
    f"<form action=\"javascript:{MARK}\"><button>go</button></form>",
    f"<input autofocus onfocus=\"{MARK}\">",
    f"<details open ontoggle=\"{MARK}\">",
    f"<video><source onerror=\"{MARK}\"></video>",
    f"<base href=\"javascript:{MARK}//\">",
    f"<meta http-equiv=\"refresh\" content=\"0;url=javascript:{MARK}\">",
    f"<link rel=\"import\" href=\"data:text/html,<script>{MARK}</script>\">",
    f"<template><script>{MARK}</script></template>",
    f"<textarea></textarea><script>{MARK}</script>",
    f"<title></title><script>{MARK}</script>",
    f"<!--><script>{MARK}</script>-->",
    f"<![CDATA[<script>{MARK}</script>]]>",
    f"<scr<script>ipt>{MARK}</scr</script>ipt>",
    f"\"><script>{MARK}</script>",
    f"'><img src=x onerror={MARK}>",
    f"</code></pre><script>{MARK}</script>",
    f"```\n</code></pre><script>{MARK}</script>\n```",
    f"`<script>{MARK}</script>`",
    "<a href=\"https://example.org\" target=\"_blank\">tabnabbing</a>",
    f"{{{{ 7*7 }}}} {{% now 'Y' %}} <script>{MARK}</script>",
]
