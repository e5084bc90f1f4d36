"""The fault trials of mala-tui's own world: its disk, its signals, its journal, its load.

One module a trial (``disk_full``, ``signals``, ``poisoned_journal``, ``many_tasks``,
``stops``, ``hostile_endpoint``); ``headless_cli`` drives a headless mala-tui for the
trials that start it as a child process.

- disk full mid-run: the data dir is a small tmpfs (root can mount one; otherwise the
  journal's writes are made to fail as a full disk's would, and the row says so), filled
  while the sessions run. Every session must be stopped for that reason, the journal end
  with `run_ended`, and no agent process outlive the run.
- SIGTERM / SIGHUP mid-run: a headless demo gets the signal once every agent runs. SIGTERM
  must stop every session, journal `run_ended`, and exit 143. SIGHUP (its terminal gone)
  must leave the run going, every agent still at work; the SIGTERM that follows stops it.
- a poisoned journal: lines of every wrong shape spliced into a finished run's journal;
  `runs` and `show --json` must read every good line and name every bad one.
- many tasks at once: never more agents at once than `agent.max_concurrent`, the rest
  queued, every one finished.
- Ctrl-C, then resume: a headless `run` of real CLIs interrupted mid-run (once, or twice
  to hurry the stop) must exit 130 with its journal ended and no agent left, and
  `resume` must then finish every session.
- SIGTERM during start-up: a `run --worktree` signalled while its worktrees are made must
  exit 143 with its journal ended and every worktree and branch it made journaled, and
  `resume` must then finish every session, each in its own worktree.

- a hostile endpoint: a headless `run` whose model answers some sessions with a broken
  stream (terminal escapes and a key, as a broken gateway echoes them) and others with a
  401 on every request. The first must recover, the others fail at once saying so.

These three also count what must never leak: raw escape bytes on the terminal, and a key
(one planted in every task, the loopback's own, the broken stream's) in what mala-tui
printed or wrote.
"""
