"""What the executables promise, as the driver reads it: the CSV columns and schema version
(columns, schema), the test table (testtable, with its snapshot test_tables.json), the row
flags (flags) and the message-size lists (sizes). Nothing here runs a measurement or judges
one; `schema` and `testtable` only ask a binary for its contract (`--print-schema`,
`--list-tests`).

May import: the standard library, `pairbench.errors`, `pairbench.io`. No pandas, no
matplotlib (the rig imports it).
"""
