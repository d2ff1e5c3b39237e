"""The package's version, in one place: ``pyproject.toml`` reads it, and a calibration file
records the version it was fitted for (``calibration``)."""

VERSION = "0.1.0"
