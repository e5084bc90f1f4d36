"""The Textual app: live dashboard, session detail, checkpoints, restart approval, themes."""
