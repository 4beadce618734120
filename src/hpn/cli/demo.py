"""`hpn demo`: the main job on built-in defaults."""

from __future__ import annotations


def demo() -> None:
    """Build the default HPN pod, print its summary and draw one segment."""
    raise NotImplementedError
