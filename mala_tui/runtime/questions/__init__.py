"""The run's one desk for questions, and the restart approvals asked at it."""
