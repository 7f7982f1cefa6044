"""Shared pieces of mccdb's benchmark scripts.

machine (describe the host), stats (medians with spread, ratios, percentiles),
sqlfiles (query files and plan-forcing recipes), pg (sessions, timed runs,
co-runs, held batches, the scheduler), report (Markdown, PNG, result header).
"""
