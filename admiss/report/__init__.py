"""Report renderers: text (the seed's format), json, and rich (the only module importing rich)."""
