"""Signs in to an MCP server with the official Python SDK's own OAuth client and
makes a call that pauses for an answer (tests/e2e/python-oauth.test.mjs).

    oauth_client.py SERVER_URL --mode legacy|2026-07-28|auto --sub ada [--answer NAME]

The SDK does the whole flow itself (`mcp.client.auth.OAuthClientProvider`):
the server's 401, protected resource metadata, authorization server metadata,
dynamic client registration, PKCE S256 with `resource`, the code exchange.
The "browser" is headless: the redirect handler follows the authorization URL
over plain HTTP against the test's oidc-provider, fills its login form with
the user id and submits its consent form (as tests/e2e/oauth/user.mjs does),
and hands the code and state of the redirect back through the callback
handler. Nothing listens on the redirect URI: the redirect is caught, never
fetched.

Prints one JSON line on stdout: what the flow did (registration, the
authorization request, the HTTP exchanges in order), the negotiated protocol
version, the tools and the paused call's result. On failure the same line
carries `ok: false` and `error`, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlparse

import anyio
import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken


class MemoryStorage:
    """The SDK's TokenStorage, in memory: every run starts signed out."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None
        self.token_history: list[OAuthToken] = []

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.token_history.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class _FirstForm(HTMLParser):
    """The first <form> of a page: its attributes, inputs and buttons."""

    def __init__(self) -> None:
        super().__init__()
        self.form: dict[str, str] | None = None
        self.inputs: list[dict[str, str]] = []
        self.buttons: list[dict[str, str]] = []
        self._inside = False
        self._done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v if v is not None else "") for k, v in attrs}
        if tag == "form" and not self._done and self.form is None:
            self.form, self._inside = a, True
        elif self._inside and tag == "input":
            self.inputs.append(a)
        elif self._inside and tag == "button":
            self.buttons.append(a)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self._inside:
            self._inside, self._done = False, True


class HeadlessBrowser:
    """Plays the user `sub` on oidc-provider's login and consent pages (see provider.mjs)."""

    def __init__(self, sub: str) -> None:
        self.sub = sub
        self.steps: list[str] = []
        # Its own cookies (the provider's session), redirects followed by hand.
        self.http = httpx2.AsyncClient(follow_redirects=False, timeout=20.0)

    async def authorize(self, authorization_url: str) -> str:
        """Follows the authorization URL; returns the redirect that leaves the provider."""
        origin = urlparse(authorization_url)._replace(path="", params="", query="", fragment="").geturl()
        method, url, data = "GET", authorization_url, None  # data: a urlencoded form body
        for _ in range(25):
            headers = {"content-type": "application/x-www-form-urlencoded"} if data is not None else {}
            res = await self.http.request(method, url, content=data, headers=headers)
            if 300 <= res.status_code < 400:
                nxt = urljoin(url, res.headers["location"])
                self.steps.append(f"redirect {urlparse(nxt).path}")
                if urlparse(nxt)._replace(path="", params="", query="", fragment="").geturl() != origin:
                    return nxt  # back to the client's redirect URI
                method, url, data = "GET", nxt, None
                continue
            if res.status_code != 200:
                raise RuntimeError(f"browser: {res.status_code} at {url}: {res.text[:500]}")
            page = _FirstForm()
            page.feed(res.text)
            prompt = (page.form or {}).get("data-prompt")
            if not prompt:
                raise RuntimeError(f"browser: no login/consent form at {url}: {res.text[:500]}")
            self.steps.append(prompt)
            fields: list[tuple[str, str]] = []
            for i in page.inputs:
                name = i.get("name")
                if not name:
                    continue
                if prompt == "login" and name == "sub":
                    fields.append((name, self.sub))
                elif i.get("type", "text").lower() == "checkbox":
                    if "checked" in i:  # consent: grant every requested scope
                        fields.append((name, i.get("value", "")))
                else:
                    fields.append((name, i.get("value", "")))
            if prompt == "consent":
                fields.append(("decision", "allow"))
            elif prompt != "login":
                raise RuntimeError(f"browser: unknown form {prompt} at {url}")
            method = (page.form or {}).get("method", "get").upper()
            url = urljoin(url, (page.form or {}).get("action", url))
            data = urlencode(fields).encode()
        raise RuntimeError("browser: too many steps")


async def run(args: argparse.Namespace, out: dict[str, Any]) -> None:
    """Fills `out` as it goes, so a failure still reports how far the flow got."""
    http_log: list[dict[str, Any]] = []
    out["http"] = http_log
    registrations: list[dict[str, Any]] = []
    authorizations: list[dict[str, Any]] = []
    elicitations: list[dict[str, Any]] = []
    challenges: list[str] = []
    out.update(registrations=registrations, authorizations=authorizations, elicitations=elicitations,
               challenges=challenges)

    storage = MemoryStorage()
    browser = HeadlessBrowser(args.sub)
    pending: dict[str, AuthorizationCodeResult] = {}

    async def redirect_handler(authorization_url: str) -> None:
        q = {k: v[0] for k, v in parse_qs(urlparse(authorization_url).query).items()}
        authorizations.append({
            "endpoint": authorization_url.split("?")[0],
            "scope": q.get("scope"),
            "resource": q.get("resource"),
            "code_challenge_method": q.get("code_challenge_method"),
            "has_code_challenge": bool(q.get("code_challenge")),
            "prompt": q.get("prompt"),
            "redirect_uri": q.get("redirect_uri"),
        })
        back = await browser.authorize(authorization_url)
        cq = {k: v[0] for k, v in parse_qs(urlparse(back).query).items()}
        if "error" in cq:
            raise RuntimeError(f"authorization refused: {cq}")
        pending["result"] = AuthorizationCodeResult(code=cq["code"], state=cq.get("state"), iss=cq.get("iss"))

    async def callback_handler() -> AuthorizationCodeResult:
        return pending.pop("result")

    oauth = OAuthClientProvider(
        server_url=args.server_url,
        client_metadata=OAuthClientMetadata(
            client_name=f"durable-mcp-e2e-python-{args.mode}",
            redirect_uris=[args.redirect],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",  # a public client: PKCE, no secret
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )

    async def on_request(request: httpx2.Request) -> None:
        entry: dict[str, Any] = {"method": request.method, "url": str(request.url).split("?")[0]}
        try:
            content = request.content
        except httpx2.RequestNotRead:  # a streamed body: nothing to record
            content = b""
        if request.method == "POST" and request.headers.get("content-type", "").startswith("application/json"):
            try:
                body = json.loads(content or b"null")
            except ValueError:
                body = None
            if isinstance(body, dict) and "redirect_uris" in body:
                registrations.append({"url": entry["url"], "request": body})
            elif isinstance(body, dict) and "method" in body:
                entry["rpc"] = body["method"]
        if request.method == "POST" and b"grant_type=" in content:
            form = {k: v[0] for k, v in parse_qs(content.decode()).items()}
            entry["grant_type"] = form.get("grant_type")
            entry["resource"] = form.get("resource")
            entry["has_code_verifier"] = "code_verifier" in form
        if request.headers.get("mcp-protocol-version"):
            entry["protocol_version"] = request.headers["mcp-protocol-version"]
        entry["bearer"] = request.headers.get("authorization", "").startswith("Bearer ")
        http_log.append(entry)

    async def on_response(response: httpx2.Response) -> None:
        # The entry of this response's request: the last one for its URL without a status.
        url = str(response.request.url).split("?")[0]
        entry = next((e for e in reversed(http_log) if e["url"] == url and "status" not in e), None)
        if entry is not None:
            entry["status"] = response.status_code
        challenge = response.headers.get("www-authenticate")
        if challenge:
            challenges.append(f"{response.status_code} {challenge}")
            if entry is not None:
                entry["challenge"] = challenge
        if registrations and url == registrations[-1]["url"] and "status" not in registrations[-1]:
            await response.aread()
            registrations[-1]["status"] = response.status_code
            try:
                body = response.json()
                # A credential of its own: not for the report.
                if isinstance(body, dict):
                    body.pop("registration_access_token", None)
                registrations[-1]["response"] = body
            except ValueError:
                registrations[-1]["response"] = response.text[:500]

    async def elicitation_callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        schema = getattr(params, "requested_schema", None)
        if hasattr(schema, "model_dump"):
            schema = schema.model_dump(mode="json", by_alias=True, exclude_none=True)
        elicitations.append({
            "message": getattr(params, "message", None),
            "fields": sorted((schema or {}).get("properties", {}).keys()) if isinstance(schema, dict) else None,
        })
        return types.ElicitResult(action="accept", content={"username": args.answer, "email": f"{args.answer}@example.com"})

    http = httpx2.AsyncClient(
        auth=oauth,
        timeout=httpx2.Timeout(30.0, read=60.0),
        event_hooks={"request": [on_request], "response": [on_response]},
    )
    try:
        async with http, browser.http:
            async with Client(
                streamable_http_client(args.server_url, http_client=http),
                mode=args.mode,
                elicitation_callback=elicitation_callback,
                read_timeout_seconds=60.0,
            ) as client:
                out["protocol_version"] = client.protocol_version
                tools = await client.list_tools()
                out["tools"] = sorted(t.name for t in tools.tools)
                result = await client.call_tool("test_elicitation", {"message": f"Who are you ({args.mode})?"})
                out["result"] = {
                    "is_error": bool(result.is_error),
                    "text": [c.text for c in result.content if getattr(c, "type", None) == "text"],
                }
                who = await client.call_tool("whoami", {})
                out["whoami"] = json.loads(who.content[0].text) if who.content else None
        out["ok"] = True
    finally:
        ctx = oauth.context
        prm = ctx.protected_resource_metadata
        out["sdk"] = {
            # What the SDK made of the server's metadata and the authorization server's.
            "protected_resource_metadata": prm.model_dump(mode="json", exclude_none=True) if prm else None,
            "auth_server_url": ctx.auth_server_url,
            "as_scopes_supported": ctx.oauth_metadata.scopes_supported if ctx.oauth_metadata else None,
            "client_metadata_scope": ctx.client_metadata.scope,
            "resource": ctx.get_resource_url(),
            "client_id": ctx.client_info.client_id if ctx.client_info else None,
        }
        out["token_scopes"] = [t.scope for t in storage.token_history]
        out["browser_steps"] = browser.steps


def _leaves(e: BaseException) -> list[BaseException]:
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in _leaves(sub)]
    return [e]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("server_url")
    p.add_argument("--mode", default="legacy", help="legacy (2025-11-25 session), 2026-07-28, or auto")
    p.add_argument("--sub", default="ada", help="the user who signs in")
    p.add_argument("--answer", default="ada-python", help="the username the form is answered with")
    p.add_argument("--redirect", default="http://127.0.0.1:9/callback")
    p.add_argument("--timeout", type=float, default=90.0)
    args = p.parse_args()

    out: dict[str, Any] = {"ok": False, "mode": args.mode}

    async def bounded() -> None:
        with anyio.fail_after(args.timeout):
            try:
                await run(args, out)
            except BaseException as e:  # report what the SDK did, then fail
                leaves = _leaves(e)
                out["error"] = "; ".join(f"{type(x).__name__}: {x}" for x in leaves)
                out["traceback"] = "".join(traceback.format_exception(leaves[0]))[-3000:]
                raise

    try:
        anyio.run(bounded)
    except BaseException as e:  # noqa: BLE001
        out.setdefault("error", f"{type(e).__name__}: {e}")
    print(json.dumps(out))
    return 0 if out.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
