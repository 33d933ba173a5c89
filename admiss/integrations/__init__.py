"""Adapters into the tools users already run, one module per tool.

Each module imports its third-party library and nothing else in admiss does; each is a thin
layer over ``admiss.api`` and ships behind its own extra (``pip install 'admiss[litellm]'``).
"""
