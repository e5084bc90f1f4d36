"""Git: a session's own worktree, the work in progress kept aside, and landing it."""
