"""What a run hands out when it ends: how each session ended, and why."""

from __future__ import annotations

from dataclasses import dataclass

from mala_tui.core.actions import EndStatus


@dataclass
class RunResult:
    statuses: dict[str, EndStatus]
    reasons: dict[str, str]
    pids: list[int]
    stop_cause: str = ""
    """Why the run was stopped before its sessions ended (a signal, a full disk); "" if not."""

    @property
    def ok(self) -> bool:
        return all(status is EndStatus.DONE for status in self.statuses.values())
