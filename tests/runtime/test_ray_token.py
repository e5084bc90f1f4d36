"""A local Ray's token is this user's alone: 0600, in a 0700 folder of its own, never ~/.ray.

Ray left to itself writes the token of a local cluster to ~/.ray/auth_token as the umask
allows (0644 under the usual 022), where another local user can read it and pass the
cluster's token check. The real token of a real local Ray is checked in tests/cluster.
"""

from __future__ import annotations

import atexit
import functools
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mala_tui.runtime.cluster import ray_token
from mala_tui.runtime.cluster.ray_refusals import EngineRefused
from mala_tui.runtime.cluster.ray_token import TOKEN_VARIABLES, private_token


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    """Set the process's umask for the test; the old one is back after it."""
    old = os.umask(0o022)

    def set_to(value: int) -> None:
        os.umask(value)

    try:
        yield set_to
    finally:
        os.umask(old)


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o277])
def test_the_token_is_0600_alone_in_a_0700_folder_whatever_the_umask(
    tmp_path: Path, umask: Callable[[int], None], mask: int
) -> None:
    umask(mask)
    token = private_token(tmp_path)
    assert mode(token) == 0o600
    assert mode(token.parent) == 0o700
    assert token.parent.parent == tmp_path
    assert [entry.name for entry in token.parent.iterdir()] == ["auth_token"]
    text = token.read_text()
    assert len(text) == 64 and int(text, 16) >= 0, "256 bits, hex, as Ray's own"


def test_each_token_is_new_in_a_folder_of_its_own(tmp_path: Path) -> None:
    first, second = private_token(tmp_path), private_token(tmp_path)
    assert first.parent != second.parent
    assert first.read_text() != second.read_text()


def test_a_folder_that_cannot_be_made_is_a_one_line_refusal(tmp_path: Path) -> None:
    with pytest.raises(EngineRefused) as refused:
        private_token(tmp_path / "missing")
    message = str(refused.value)
    assert "private folder for the local Ray's token" in message
    assert str(tmp_path / "missing") in message and "\n" not in message


@pytest.fixture
def ray_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Callable[[], object]]:
    """No token setting of Ray's in the environment, temporary folders under tmp_path, and
    the removal at exit recorded rather than registered (returned: what would be run)."""
    for name in (*TOKEN_VARIABLES, "RAY_AUTH_MODE"):
        # Set first, so that what the code under test sets is undone after the test too.
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    at_exit: list[Callable[[], object]] = []

    def record(function: Callable[..., object], *args: object, **kwargs: object) -> None:
        at_exit.append(functools.partial(function, *args, **kwargs))

    monkeypatch.setattr(atexit, "register", record)
    return at_exit


def test_a_local_ray_is_pointed_at_a_private_token_removed_at_exit(
    tmp_path: Path, ray_env: list[Callable[[], object]], umask: Callable[[int], None]
) -> None:
    umask(0o022)  # what Ray's own file got 0644 under
    ray_token.token_for_local_ray()
    token = Path(os.environ["RAY_AUTH_TOKEN_PATH"])
    assert token.parent.parent == tmp_path / "tmp"
    assert mode(token) == 0o600 and mode(token.parent) == 0o700
    (remove,) = ray_env
    remove()
    assert not token.parent.exists()


def test_a_second_local_ray_in_the_process_keeps_the_first_token(
    ray_env: list[Callable[[], object]],
) -> None:
    # Ray's driver keeps the first token it read: a second would be refused by the new cluster.
    ray_token.token_for_local_ray()
    first = os.environ["RAY_AUTH_TOKEN_PATH"]
    ray_token.token_for_local_ray()
    assert os.environ["RAY_AUTH_TOKEN_PATH"] == first
    assert len(ray_env) == 1


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("RAY_AUTH_TOKEN", "the-users-own"),
        ("RAY_AUTH_TOKEN_PATH", "/somewhere/the-users-token"),
        ("RAY_AUTH_MODE", "disabled"),
    ],
)
def test_a_token_the_user_gave_or_auth_turned_off_is_left_alone(
    tmp_path: Path,
    ray_env: list[Callable[[], object]],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    value: str,
) -> None:
    monkeypatch.setenv(name, value)
    ray_token.token_for_local_ray()
    assert os.environ[name] == value
    if name != "RAY_AUTH_TOKEN_PATH":
        assert "RAY_AUTH_TOKEN_PATH" not in os.environ
    assert ray_env == [] and list((tmp_path / "tmp").iterdir()) == []
