"""Other tools' outputs as pairbench runs (`pairbench import`, docs/import.md): one parser
per tool (osu, perftest, imb, nccl: text, and JSON where the tool writes it) turning a file
into the benchmarks it holds (base: Parsed, Bench, Measure; every bad input an error naming
the file and line), the imported tests' descriptions (catalog: what each tool's test
measures, how it times, which pairbench test it resembles), and the run directory made of
them (build: files of one configuration are repetitions, rows in the schema, metadata.json
with each file's provenance and sha256, written whole or not at all).

May import: the standard library, `pairbench.errors`, `pairbench.io`, `pairbench.contract`,
`pairbench.runner` (its run directory helpers only). Never pandas: the parsers read text.
"""
