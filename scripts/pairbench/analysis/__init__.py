"""What judges the rows: data frames of a run (frames), the statistics of a verdict over
repetitions (verdict, gate), compare, noise, accept, the fabric's outlier analysis
(outliers), a run's findings, and the decision of `--repetitions auto` (decide).

May import: the standard library, pandas/numpy/scipy, `pairbench.errors`, `pairbench.io`,
`pairbench.contract`. Never runner/ (the analysis reads run directories, it does not run
anything) or present/.
"""
