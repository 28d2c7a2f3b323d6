"""Renderers: an ``Explanation`` in, text out. One module per format."""
