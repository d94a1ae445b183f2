"""Safe I/O: files written whole or not at all (safeio), the declarative schema of the TOML
inputs (tomlschema), and child processes that are bounded in time and ended as a process
group (procutil).

May import: the standard library and `pairbench.errors` only. No pandas, no matplotlib:
everything under runner/ builds on it, and the runner runs inside the Soft-RoCE rig's VM,
where importing pandas alone costs about a minute.
"""
