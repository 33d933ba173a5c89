"""The savings page: the figures of ``admiss savings`` with charts, as one self-contained HTML file.

The charts are SVG drawn here (no script, no stylesheet or font from elsewhere), so the page
opens the same offline, in a mail attachment, or in a CI artifact viewer.
"""
