"""What a run hands out: the approvals it waits on, and how it ended."""

from __future__ import annotations

from dataclasses import dataclass

from mala_tui.core.actions import EndStatus


@dataclass(frozen=True)
class ApprovalRequest:
    """A checkpoint waiting for a person: approve, deny, or approve an edited text."""

    session: str
    checkpoint_number: int
    checkpoint_text: str
    reason: str
    asked_at: float


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
