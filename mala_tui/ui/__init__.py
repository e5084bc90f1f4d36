"""The front ends on a terminal: the Textual app (live dashboard, session detail,
checkpoints, restart approval, themes), and beside it the headless output (`headless`)
and the bell and desktop notifications both of them raise (`attention`)."""
