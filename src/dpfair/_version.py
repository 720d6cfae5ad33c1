"""The single source of dpfair's version (read by the build backend and by ``dpfair.__version__``)."""

__version__ = "0.2.0"
