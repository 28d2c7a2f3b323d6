"""Decode: bytes on disk -> raw events and metadata. Nothing here knows about GPUs."""
