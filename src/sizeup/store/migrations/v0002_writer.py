"""Version 2: `runs.writer`, the identity of the process writing a run (store/writer.py), so that a run killed
with SIGKILL can be told from one still running."""

VERSION = 2
SQLITE = ("ALTER TABLE runs ADD COLUMN writer TEXT",)
POSTGRES = SQLITE
