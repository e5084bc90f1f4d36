"""Development material, not run by mala-tui itself: the sample run the UI's tests and
screenshots use, and the screenshot renderer (`python -m mala_tui.dev.screenshots`)."""
