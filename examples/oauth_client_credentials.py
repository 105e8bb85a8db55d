"""An agent signed in with OAuth client credentials (Cognito on AWS, or any
OAuth server): the token is fetched on first use, fetched again shortly
before it expires (Cognito's last an hour), and once more when the API
answers 401, so a long-running agent never sends a stale one. With the MCP
Python SDK; any httpx-based client takes the same `auth`.

    pip install mcp
    TOOLGATE_URL=https://<api>/mcp \
    TOOLGATE_TOKEN_URL=https://<domain>.auth.<region>.amazoncognito.com/oauth2/token \
    TOOLGATE_CLIENT_ID=... TOOLGATE_CLIENT_SECRET=... TOOLGATE_SCOPE=toolgate/tools \
    python oauth_client_credentials.py
"""

import asyncio
import os
import threading
import time

import anyio
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


class ClientCredentials(httpx.Auth):
    """Bearer tokens from an OAuth token endpoint (RFC 6749 §4.4)."""

    def __init__(self, token_url, client_id, client_secret, scope=None):
        self.token_url = token_url
        self.client = (client_id, client_secret)
        self.scope = scope
        self.token, self.renew_at = None, 0.0
        self.async_lock, self.sync_lock = anyio.Lock(), threading.Lock()

    def _form(self):
        return {"grant_type": "client_credentials", **({"scope": self.scope} if self.scope else {})}

    def _keep(self, response):
        response.raise_for_status()
        body = response.json()
        lifetime = float(body.get("expires_in", 3600))
        # Renew a minute early, or at 90% of a short lifetime.
        self.token = body["access_token"]
        self.renew_at = time.monotonic() + lifetime - min(60.0, lifetime / 10)
        return self.token

    def _fresh(self, stale):
        return self.token and self.token != stale and time.monotonic() < self.renew_at

    async def _token(self, stale=None):
        async with self.async_lock:
            if self._fresh(stale):
                return self.token
            async with httpx.AsyncClient(timeout=30) as http:
                return self._keep(await http.post(self.token_url, data=self._form(), auth=self.client))

    def _token_sync(self, stale=None):
        with self.sync_lock:
            if self._fresh(stale):
                return self.token
            with httpx.Client(timeout=30) as http:
                return self._keep(http.post(self.token_url, data=self._form(), auth=self.client))

    async def async_auth_flow(self, request):
        token = await self._token()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:  # revoked or expired early: once more
            request.headers["Authorization"] = f"Bearer {await self._token(stale=token)}"
            yield request

    def sync_auth_flow(self, request):
        token = self._token_sync()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            request.headers["Authorization"] = f"Bearer {self._token_sync(stale=token)}"
            yield request


URL = os.environ.get("TOOLGATE_URL", "http://127.0.0.1:8080/mcp")
AUTH = ClientCredentials(
    os.environ["TOOLGATE_TOKEN_URL"],
    os.environ["TOOLGATE_CLIENT_ID"],
    os.environ["TOOLGATE_CLIENT_SECRET"],
    os.environ.get("TOOLGATE_SCOPE"),
)
# Seconds between the two calls: long enough, and the token is renewed.
PAUSE = float(os.environ.get("TOOLGATE_EXAMPLE_PAUSE", "0"))


async def call(code):
    async with streamablehttp_client(URL, auth=AUTH) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("python__execute", {"code": code})
            if result.isError:
                raise SystemExit(result.content[0].text)
            return result.structuredContent["result"]


async def main():
    print("first call:", await call("result = 6 * 7"))
    await asyncio.sleep(PAUSE)
    print("second call:", await call("result = 6 * 8"))


asyncio.run(main())
