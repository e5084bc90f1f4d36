"""Requests from a console to a run's host, over its Unix socket, and the host's refusals.

A refusal comes back as what the supervisor itself would have raised (QuestionClosed,
KeyError, MessageError, ValueError), so a console acts on a run in another process as
on one in its own.
"""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path
from typing import Any, Final

from mala_tui.core.observations import Decision
from mala_tui.core.operator_messages import MessageError
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.runtime.consoles.sockets import ChannelError
from mala_tui.runtime.questions.desk import QuestionClosed, Reply

REQUEST_SECONDS: Final = 10.0
"""How long a command waits for the host to answer before the host counts as gone."""


def request(
    path_to_socket: Path,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    timeout: float = REQUEST_SECONDS,
) -> Any:
    """One request; its JSON answer. The host's refusals raise what the supervisor's own
    method would (QuestionClosed, KeyError, MessageError, ValueError).

    Raises:
        ChannelError: the host cannot be reached.
    """
    connection = UnixConnection(path_to_socket, timeout)
    try:
        payload = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        status = response.status
    except (OSError, http.client.HTTPException) as exc:
        raise ChannelError(f"the run's host cannot be reached: {exc}") from None
    finally:
        connection.close()
    try:
        answer = json.loads(raw) if raw else {}
    except ValueError:
        raise ChannelError(f"the run's host answered {status} without JSON") from None
    if status == 200:
        return answer
    _raise_refusal(status, answer)
    return None


class UnixConnection(http.client.HTTPConnection):
    """HTTP over the run's Unix socket (the standard library's client, its socket swapped)."""

    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self._path))
        except OSError:
            sock.close()
            raise
        self.sock = sock


def quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


class _Closed(QuestionClosed):
    """A `QuestionClosed` the host sent: its message as the host worded it."""

    def __init__(self, question: str, message: str, reply: Reply) -> None:
        super().__init__(question, "", reply)
        self.message = message


def _raise_refusal(status: int, answer: Any) -> None:
    data = answer if isinstance(answer, dict) else {}
    message = str(data.get("error") or f"the run's host refused the request ({status})")
    kind = data.get("kind")
    if kind == "closed":
        said = str(data.get("answer", ""))
        choice: Decision | PermissionAnswer
        try:
            choice = Decision(said)
        except ValueError:
            try:
                choice = PermissionAnswer(said)
            except ValueError:
                raise KeyError(message) from None
        try:
            by = AnsweredBy(str(data.get("by", "")))
        except ValueError:
            raise KeyError(message) from None
        reply = Reply(
            choice,
            by,
            str(data.get("reason", "")),
            console=str(data.get("console", "")),
        )
        raise _Closed(str(data.get("question", "")), message, reply)
    if kind == "key":
        raise KeyError(message)
    if kind == "message":
        raise MessageError(message)
    raise ValueError(message)
