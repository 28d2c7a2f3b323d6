"""traceview's version, in a bottom module: the renderers and the measuring packages
print it, and importing it from the package facade would make them import the facade,
which imports them back (lazily) to offer ``capture`` and the report's types."""

__version__ = "0.1.0"
