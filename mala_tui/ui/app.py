"""The mala-tui Textual app: wires the source, the screens, the themes and the live updates.

`MalaApp(source, settings=...)` shows a live run (a `runtime.run.supervisor.Supervisor`,
run in a worker from mount until quit) or a finished one (a `RunState` read
from its journal: nothing can be changed). `run_app` runs it in the terminal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import ClassVar, Final

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.screen import Screen
from textual.worker import Worker

from mala_tui.config import Settings
from mala_tui.core.operator_actions import AddSession
from mala_tui.core.questions import Question, QuestionKind
from mala_tui.runtime.run.landings import FinishedRun
from mala_tui.runtime.session.by_hand import ByHandError, Interactive, run_here
from mala_tui.ui.answer_queue import AnswerQueue
from mala_tui.ui.attention import Attention, Desktop, desktop_protocol
from mala_tui.ui.bridge import UpdateBridge
from mala_tui.ui.controller import Controller, ReadOnlyError
from mala_tui.ui.keys import app_keys
from mala_tui.ui.palette import SessionCommands
from mala_tui.ui.run_in_app import RunInApp
from mala_tui.ui.screens.checkpoints import CheckpointScreen
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.screens.detail import DetailScreen
from mala_tui.ui.screens.help import HelpScreen
from mala_tui.ui.screens.new_task import NewTask, NewTaskScreen
from mala_tui.ui.services import Services
from mala_tui.ui.session_actions import SessionActions
from mala_tui.ui.source import Source
from mala_tui.ui.themes import load_themes, own_variable_defaults, theme_folders

DEFAULT_THEME: Final = "mala-dark"


class MalaApp(App[int]):
    """Watches a run's sessions; approves restarts; shows checkpoints, history and charts."""

    # Absolute, so subclasses defined elsewhere find it too.
    CSS_PATH = str(Path(__file__).with_name("app.tcss"))
    TITLE = "mala-tui"
    COMMANDS: ClassVar = App.COMMANDS | {SessionCommands}
    DEFAULT_MODE: ClassVar[str] = "dashboard"
    DASHBOARD: ClassVar[type[DashboardScreen]] = DashboardScreen
    """The dashboard's class (the UI benchmark swaps in variants to compare)."""
    BINDINGS: ClassVar[list[BindingType]] = [
        *app_keys(),
        # `a` and `P` when nothing of theirs waits: hidden, and they say so (ui.keys).
        Binding("a", "review_approvals", "Approvals", show=False),
        Binding("P", "review_permissions", "Permissions", show=False),
        Binding("n", "new_task", "New session"),
        Binding("T", "change_theme", "Theme", show=False),
        # Textual's own ctrl+q says it returns to the command prompt; here it is q.
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, tooltip="the same as q"),
    ]

    def __init__(
        self,
        source: Source,
        *,
        settings: Settings,
        clock: Callable[[], float] = time.time,
        resume_command: str | None = None,
        finished: FinishedRun | None = None,
        attached: bool = False,
        question: str | None = None,
    ) -> None:
        """`finished`: a finished run's worktree sessions, landed or discarded from here;
        `question`: the id of a question to open at once (a web console's link to it)."""
        super().__init__()
        self.question = question
        self.finished = finished
        self.attached = attached
        """A console of a run another process hosts (`mala-tui attach`, or a foreground
        run's): `D` detaches, and `q` asks whether to detach or to stop the run."""
        self.detached = False
        """The person left this console and the run goes on (`D`, `q` then detach)."""
        self.resume_command = resume_command
        """For a finished run whose sessions had not all ended: how to carry it on."""
        self.resume_requested = False
        """The person asked (R, or the palette) to resume the run once the app has ended."""
        self.settings = settings
        self.clock = clock
        """Wall-clock seconds, as the events' times: the run's age is now less its start."""
        self.controller = Controller(
            source, landings=finished.landings if finished is not None else None
        )
        self.bridge = UpdateBridge(self)
        self.session_actions = SessionActions(self, self.controller, self.bridge)
        self.services = Services(
            self.controller,
            self.bridge,
            self.session_actions,
            clock,
            shell=self,
        )
        self.answers = AnswerQueue(self.services)
        """Restart approvals and permission requests, put to the person in turn."""
        # A mode, not get_default_screen: only screens reached through modes or
        # push_screen get their CSS_PATH loaded.
        self.add_mode("dashboard", lambda: self.DASHBOARD(self.services))
        ui = settings.ui
        self.attention = Attention(
            self._to_terminal,
            bell=ui.bell,
            desktop=desktop_protocol(Desktop(ui.desktop_notifications), os.environ),
            in_tmux=bool(os.environ.get("TMUX")),
            run_id=self.controller.state.run_id,
        )
        """Rings and notifies when an approval or a permission waits, or a session fails
        (ui.attention)."""
        self.run_in_app = RunInApp(self, self.controller, self.bridge, settings)
        loaded = load_themes(theme_folders())
        for theme in loaded.themes.values():
            self.register_theme(theme)
        self._theme_errors = loaded.message() if loaded.errors else ""
        wanted = settings.ui.theme
        self._theme_missing = "" if wanted in self.available_themes else wanted
        self.theme = wanted if not self._theme_missing else DEFAULT_THEME

    def get_driver_class(self) -> type[Driver]:
        driver = super().get_driver_class()
        if sys.platform == "win32":
            return driver
        from mala_tui.ui.terminal_driver import MalaDriver, textual_driver

        # Textual's own driver, unless the environment chose another (TEXTUAL_DRIVER).
        return MalaDriver if driver is textual_driver() else driver

    # -- themes ------------------------------------------------------------------------------------

    def get_theme_variable_defaults(self) -> dict[str, str]:
        colours = self.current_theme.to_color_system().generate()
        return own_variable_defaults(colours)

    # -- start and stop ----------------------------------------------------------------------------

    def on_mount(self) -> None:
        if self._theme_errors:
            self.notify(
                self._theme_errors, title="Themes", severity="error", timeout=20, markup=False
            )
        if self._theme_missing:
            self.notify(
                f"No theme is named {self._theme_missing!r}; using {DEFAULT_THEME}",
                severity="warning",
                markup=False,
            )
        if self.resume_command is not None:
            self.notify(
                f"Sessions of this run had not ended: R resumes it ({self.resume_command})",
                title="Resumable",
                timeout=15,
                markup=False,
            )
        supervisor = self.controller.supervisor
        if supervisor is None:
            if self.finished is not None:
                self.bridge.attach(self.finished)  # what a landing records shows
            return
        self.bridge.attach(supervisor)
        supervisor.listeners.events.append(self.attention)
        self.bridge.questions.subscribe(self, self._on_questions)
        self.answers.start(self.controller.questions())
        if self.question is not None:
            self.call_later(self.answers.open, self.question)
        self.run_in_app.start(supervisor)

    def _on_questions(self, waiting: list[Question]) -> None:
        self.answers.on_questions(waiting)
        self.refresh_bindings()  # `a` and `P` show in the footer while one of theirs waits

    def on_unmount(self) -> None:
        self.bridge.detach()
        supervisor = self.controller.supervisor
        if supervisor is not None and self.attention in supervisor.listeners.events:
            supervisor.listeners.events.remove(self.attention)

    def _to_terminal(self, text: str) -> None:
        # As App.bell writes its BEL: straight to the driver, which owns the terminal.
        if not self.is_headless and self._driver is not None:
            self._driver.write(text)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.run_in_app.on_worker_state_changed(event)

    async def action_quit(self) -> None:
        """Stop every session, wait for the supervisor to finish (agents gone), then exit;
        in a console of a hosted run, first ask: detach (the run goes on) or stop it
        (`RunInApp.quit`)."""
        self.run_in_app.quit()

    def action_detach(self) -> None:
        """Close this console; the run goes on (only a console of a hosted run can, while
        the run goes on)."""
        self.run_in_app.detach()

    def close_console(self) -> None:
        """This console goes (its terminal closed, a signal to detach): detached while the
        run goes on, else it leaves (`RunInApp.close_console`)."""
        self.run_in_app.close_console()

    def stop_and_exit(self, *, ask: bool = True) -> None:
        """Stop every session with the run, then exit once the run has ended. `ask`: False
        when the run was told already (a signal the run's host got too)."""
        self.run_in_app.stop_and_exit(ask=ask)

    # -- the app's own actions -------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """What needs the run to go on is hidden once it cannot be acted on (a finished run,
        or a console whose run has ended since: its host is gone with it)."""
        live = self.controller.live
        if action == "review":  # shown while a question of its kind waits
            kinds = {question.kind.value for question in self.controller.questions()}
            return bool(parameters) and parameters[0] in kinds
        if action in {"review_approvals", "new_task", "review_permissions"}:
            return live
        if action == "resume_run":
            return self.resume_command is not None and self.controller.supervisor is None
        if action == "detach":
            return self.attached and live
        return True

    def action_new_task(self) -> None:
        """A dialog for a new session: task, name, folder (the first session's by default)."""
        if isinstance(self.screen, NewTaskScreen) or not self.controller.live:
            return
        sessions = self.controller.state.sessions
        number = len(sessions) + 1
        while f"task-{number}" in sessions:
            number += 1
        folders = [Path(state.cwd) for state in sessions.values() if state.cwd]
        controller = self.controller
        try:
            profiles = controller.profile_names()
        except ReadOnlyError as exc:
            self.notify(str(exc), title="New session", severity="warning", markup=False)
            return

        def added(task: NewTask | None) -> None:
            if task is not None:
                profile = f" with profile {task.profile}" if task.profile else ""
                self.notify(f"{task.name} added to the run{profile}", markup=False)

        self.push_screen(
            NewTaskScreen(
                f"task-{number}",
                folders[0] if folders else Path.cwd(),
                lambda task: controller.act(
                    AddSession(name=task.name, task=task.task, cwd=task.cwd, profile=task.profile)
                ),
                profiles,
            ),
            added,
        )

    def action_resume_run(self) -> None:
        """Leave this read-only view; the command that opened it then resumes the run."""
        if self.resume_command is None or self.controller.supervisor is not None:
            return
        self.resume_requested = True
        self.exit(0)

    def action_review(self, kind: str) -> None:
        """Open the oldest question of this kind (`QuestionKind`'s value) that waits."""
        self.answers.review(QuestionKind(kind))

    def action_review_approvals(self) -> None:
        """Open the oldest restart waiting for approval; answering it opens the next."""
        self.answers.review(QuestionKind.APPROVAL)

    def action_review_permissions(self) -> None:
        """Open the oldest tool use waiting for permission; answering it opens the next."""
        self.answers.review(QuestionKind.PERMISSION)

    # -- navigation and commands -------------------------------------------------------------------

    def open_session(self, name: str) -> None:
        if self.controller.session(name) is not None:
            self.push_screen(DetailScreen(self.services, name))

    async def run_in_terminal(self, how: Interactive) -> int:
        """Give the terminal to the interactive Claude Code until it exits: the app suspends
        (its driver held, so nothing of it reaches the other program's screen) while the run
        goes on, then comes back and repaints."""
        driver = self._driver
        if sys.platform == "win32":
            raise ByHandError("opening a session by hand needs a Unix terminal")
        from mala_tui.ui.terminal_driver import MalaDriver

        if not isinstance(driver, MalaDriver) or not driver.can_suspend:
            raise ByHandError("this console's terminal cannot be given to another program")
        with self.suspend(), driver.held():
            return await run_here(how)

    def open_checkpoints(self, name: str, number: int | None = None) -> None:
        if self.controller.session(name) is not None:
            self.push_screen(CheckpointScreen(self.services, name, number))

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        title = type(self.screen).__name__.removesuffix("Screen").lower()
        self.push_screen(HelpScreen(title, self.screen.active_bindings))

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help", "Every key of this screen", self.action_help)
        if self.resume_command is not None and self.controller.supervisor is None:
            yield SystemCommand(
                "Resume this run",
                f"Carry on the sessions that had not ended ({self.resume_command})",
                self.action_resume_run,
            )
        if self.controller.live:
            yield SystemCommand(
                "Approvals",
                "Review the restarts waiting for approval",
                self.action_review_approvals,
            )
            yield SystemCommand(
                "New session", "Add a task to the running run", self.action_new_task
            )
            yield SystemCommand(
                "Permission requests",
                "Allow or deny the tool uses waiting for permission",
                self.action_review_permissions,
            )
            yield SystemCommand(
                "Require approval for all sessions (on/off)",
                "Ask before any session restarts, or stop asking",
                self.session_actions.toggle_approval_all,
            )


def run_app(
    source: Source,
    settings: Settings,
    *,
    resume_command: str | None = None,
    resume: Callable[[], int] | None = None,
    finished: FinishedRun | None = None,
) -> int:
    """Run the app in the terminal until quit; returns the exit status.

    0 when the app ended normally with no agent process left; 1 when it
    crashed, or when an agent process outlived the run (it is then killed, and
    its pid reported on stderr). A read-only run with `resume_command` offers to
    resume it: chosen, `resume()` runs once this app has ended, and its status is returned.
    """
    app = MalaApp(source, settings=settings, resume_command=resume_command, finished=finished)
    app.run()
    status = _finish(app)
    if app.resume_requested and resume is not None:
        return resume()
    return status


async def run_app_async(
    source: Source,
    settings: Settings,
    on_app: Callable[[MalaApp], object] | None = None,
    *,
    attached: bool = False,
    question: str | None = None,
) -> int:
    """`run_app` inside a running event loop (the demo's model server shares the loop).

    `on_app` gets the app before it runs (to quit it on a signal, say). `attached`: the
    source is a run another process hosts (MalaApp.attached); `question`: one to open at
    once (MalaApp.question).
    """
    app = MalaApp(source, settings=settings, attached=attached, question=question)
    if on_app is not None:
        on_app(app)
    await app.run_async()
    return _finish(app)


def _finish(app: MalaApp) -> int:
    status = app.return_code or 0
    supervisor = app.controller.supervisor
    if supervisor is not None:
        left = supervisor.alive_pids()
        if left:
            print(f"mala-tui: agent processes outlived the run, killing: {left}", file=sys.stderr)
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            status = 1
    return status
