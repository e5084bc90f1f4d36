"""`mala-tui serve`: the app in a browser, one app process per tab, behind an access token."""
