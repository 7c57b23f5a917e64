"""Version 3: `samples.cpu_s`, each repetition's thread CPU time beside its wall time (NULL where not recorded:
older rows, GPU runs, CPU runs on more than one torch thread), which load from other processes does not add to."""

VERSION = 3
SQLITE = ("ALTER TABLE samples ADD COLUMN cpu_s REAL",)
POSTGRES = ("ALTER TABLE samples ADD COLUMN cpu_s DOUBLE PRECISION",)
