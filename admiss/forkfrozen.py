"""Imported last by the ``--jobs`` / ``check_many`` fork server (admiss/workerstart.py):
everything the server has loaded is moved out of the collector's sight before it forks.

A forked worker shares its pages with the server until it writes to them. The worker's
first collection walks every tracked object and writes to each one's header, so it
copied the server's whole heap (about 1,100 pages) before checking a bundle; frozen, the
objects are never walked there, and a worker copies only the pages it really writes.
"""

from admiss.collector import freeze_long_lived

freeze_long_lived()
