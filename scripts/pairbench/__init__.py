"""pairbench driver: sweep the executables, collect tidy CSV, plot, compare, accept, report."""

__version__ = "0.1.0"
