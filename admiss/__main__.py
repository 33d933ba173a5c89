"""``python -m admiss`` runs the command line."""

from admiss.cli import main

main()
