"""The web console's access token: made once per server, checked on every request.

Whoever can load the page can approve tools on this machine, so nothing is served
without the token: not the page, not its scripts, not the WebSocket that starts an
app process. The token is printed once, in a URL (`?token=`, as Jupyter does). The
first request that carries it gets it back as an HttpOnly cookie and is sent on to
the same address without it, so the token leaves the address bar and every later
request (the scripts, the WebSocket) carries the cookie instead. Tokens are
compared in constant time.

A page address without the token (a notification's link to a question never carries
it) opens in a browser that has the cookie; one that has not gets the token page: a
form where the token (or the whole printed URL) is pasted, POSTed to the same address,
which sets the cookie and sends the browser on to the page it asked for.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs, urlsplit

from aiohttp import web

TOKEN_BYTES = 32
"""Random bytes in a token: 256 bits, beyond guessing at any request rate."""
QUERY_KEY = "token"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

REFUSED = (
    "mala-tui serve: this console needs its access token. Open the URL with ?token= "
    "that `mala-tui serve` printed when it started.\n"
)


TOKEN_PAGE = """<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>mala-tui \u2014 access token</title>
    <link rel="icon" href="data:," />
    <style>
      body { background: #0c181f; color: #eee; font-family: menlo, monospace; margin: 3em; }
      input { width: 40em; max-width: 90%%; padding: 0.5em; font-family: inherit; }
      button { padding: 0.5em 1.5em; margin-top: 1em; font-family: inherit; }
      .wrong { color: #ff8a80; }
    </style>
  </head>
  <body>
    <h1>mala-tui</h1>
    <p>%(refused)s</p>
    <p class="wrong">%(wrong)s</p>
    <form method="post" action="">
      <label for="token">
        Access token, or the whole URL <code>mala-tui serve</code> printed:
      </label><br />
      <input id="token" name="token" type="password" autocomplete="off" autofocus required />
      <br /><button type="submit">Open</button>
    </form>
  </body>
</html>
"""
"""The page a browser without the cookie gets for a page address: the token is pasted,
then the page it asked for opens (a question's, say)."""
WRONG = "That is not this server's token: each start of `mala-tui serve` makes a new one."


def token_page(wrong: bool = False) -> web.Response:
    """The token page, refused (403) as any request without the token is."""
    text = TOKEN_PAGE % {"refused": REFUSED.strip(), "wrong": WRONG if wrong else ""}
    return web.Response(
        status=403, text=text, content_type="text/html", headers={"Cache-Control": "no-store"}
    )


def pasted_token(pasted: str) -> str:
    """The token in what was pasted: the token itself, or a URL with `?token=` in it."""
    pasted = pasted.strip()
    if "token=" in pasted:
        found = parse_qs(urlsplit(pasted).query).get(QUERY_KEY)
        if found:
            return found[0]
    return pasted


def new_token() -> str:
    """A fresh token: TOKEN_BYTES random bytes, URL-safe (43 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def cookie_name(port: int) -> str:
    """The cookie's name for a server on `port`.

    Browsers keep cookies per host, not per port: two servers on one machine (or
    two tunnels to localhost) would overwrite each other's cookie under one name.
    """
    return f"mala_tui_token_{port}"


class TokenGuard:
    """aiohttp middleware that refuses every request without the token, before any handler."""

    def __init__(self, token: str, cookie: str) -> None:
        if len(token) < 43:  # secrets.token_urlsafe(32) is 43 characters
            raise ValueError("an access token needs at least 32 random bytes")
        self._token = token.encode()
        self.cookie = cookie

    def matches(self, given: str | None) -> bool:
        """Whether `given` is the token; the comparison takes as long whatever `given` is."""
        if given is None:
            return False
        return hmac.compare_digest(given.encode(), self._token)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        given = request.query.get(QUERY_KEY)
        if given is not None:
            if not self.matches(given):
                raise web.HTTPForbidden(text=REFUSED)
            if request.method == "GET" and not _is_websocket(request):
                # The cookie from now on; the address without the token (nor in the history).
                query = request.rel_url.query.copy()
                del query[QUERY_KEY]
                found = web.HTTPFound(location=str(request.rel_url.with_query(query)))
                self.set_cookie(found, request)
                raise found
        elif not self.matches(request.cookies.get(self.cookie)):
            if request.path != "/" or _is_websocket(request):
                raise web.HTTPForbidden(text=REFUSED)
            if request.method == "POST":  # the token page's form, sent to the page it guards
                form = await request.post()
                pasted = form.get(QUERY_KEY)
                if not isinstance(pasted, str) or not self.matches(pasted_token(pasted)):
                    return token_page(wrong=True)
                # On to the page asked for, by GET, with the cookie from now on.
                onward = web.HTTPSeeOther(location=str(request.rel_url))
                self.set_cookie(onward, request)
                raise onward
            if request.method == "GET":
                return token_page()
            raise web.HTTPForbidden(text=REFUSED)
        return await handler(request)

    def set_cookie(self, response: web.StreamResponse, request: web.Request) -> None:
        response.set_cookie(
            self.cookie,
            self._token.decode(),
            httponly=True,  # no script on the page (nor one injected) can read it
            samesite="Strict",  # another site's page cannot make the browser send it
            secure=request.secure,
            path="/",
        )


def _is_websocket(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"
