"""Autoretto: make music videos and publish each channel's slots exactly once, from cron."""

__version__ = "0.1.0"
