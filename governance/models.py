"""Governance models arrive with the governance issue; the app is registered now
so its migrations start from a stable label."""
