/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CSV rows of the pairbench contract (columns: pb_schema.h).  A row is a
 * fixed array of text cells; an empty cell means "does not apply".
 */
#ifndef PB_CSV_H
#define PB_CSV_H

#include "pb_schema.h"
#include "pb_stats.h"

#include <stdint.h>
#include <stdio.h>

#define PB_CELL_MAX 256

struct pb_row {
	char cell[PB_COL_COUNT][PB_CELL_MAX];
};

/* Name of a column, e.g. "lat_us_p50". */
const char *pb_col_name(enum pb_col col);

/* All cells empty except schema_version. */
void pb_row_init(struct pb_row *row);

/* Setters; text is truncated to PB_CELL_MAX - 1 bytes. */
void pb_row_set_str(struct pb_row *row, enum pb_col col, const char *text);
void pb_row_set_u64(struct pb_row *row, enum pb_col col, uint64_t v);
void pb_row_set_i64(struct pb_row *row, enum pb_col col, int64_t v);
/* Significant digits of every number in the CSV ("%.9g"). */
#define PB_CSV_DIGITS 9

/*
 * A double with PB_CSV_DIGITS significant digits at any magnitude
 * (exponent notation below 1e-4 and from 1e9).  A non-finite value leaves
 * the cell empty (missing, never 0).
 */
void pb_row_set_double(struct pb_row *row, enum pb_col col, double v);
/* Fill the lat_us_* columns from statistics already in microseconds. */
void pb_row_set_lat_stats(struct pb_row *row, const struct pb_stats *us);
/* Append a flag to the ';'-separated flags cell. */
void pb_row_add_flag(struct pb_row *row, const char *flag);

/* Write the header line / one row (RFC 4180 quoting). Return 0 or -EIO. */
int pb_csv_write_header(FILE *f);
int pb_csv_write_row(FILE *f, const struct pb_row *row);

/*
 * --print-schema: first line "pairbench-schema <version>", then one line per
 * column "name<TAB>description".
 */
void pb_schema_print(FILE *f);

#endif
