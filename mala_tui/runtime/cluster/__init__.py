"""Sessions on other machines (`--engine ray`): the engine, a session's host on
its node, the driver-side runner that speaks to it, the wire between them, and
the mirrors of its worktree."""
