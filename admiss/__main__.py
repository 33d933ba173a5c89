"""``python -m admiss`` runs the command line."""

from admiss.launch import main

main()
