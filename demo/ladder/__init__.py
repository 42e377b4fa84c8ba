"""The "Overview" tab (id ``overview``): the timeline and the ladder.
"""

__all__ = [
    "overview",
]  # the public modules; the others are this package's internals
