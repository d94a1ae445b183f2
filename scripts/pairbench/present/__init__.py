"""What a person sees: plots (plot), the HTML report (report, templates/), the terminal
summary of a run (show), tables of compare/noise/accept results (text), the headless-
browser screenshot (screenshot), the fabric scan's outputs (fabricout) and how numbers are
written (fmt).

May import: the standard library, pandas/matplotlib/rich/jinja2, `pairbench.errors`,
`pairbench.io`, `pairbench.contract`, `pairbench.analysis`. Never runner/.
"""
