"""Shared pieces of mccdb's benchmark scripts."""
