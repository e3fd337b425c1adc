"""ptrm's built-in puzzle codecs. Each module is registered under the `ptrm.codecs` entry-point
group in pyproject.toml, exactly as a third-party plugin would be."""
