"""The app's own widgets, one public widget per module."""
