"""One session: its runner, its agent process, what reaches its manager, and the
person taking it over by hand."""
