/* SPDX-License-Identifier: BSD-3-Clause */
#include "pb_csv.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#define PB_COL_NAME_(name, desc) #name,
static const char *const pb_col_names[PB_COL_COUNT] = { PB_COLUMNS(PB_COL_NAME_) };
#undef PB_COL_NAME_
#define PB_COL_DESC_(name, desc) desc,
static const char *const pb_col_descs[PB_COL_COUNT] = { PB_COLUMNS(PB_COL_DESC_) };
#undef PB_COL_DESC_

const char *pb_col_name(enum pb_col col)
{
	return (unsigned)col < PB_COL_COUNT ? pb_col_names[col] : "?";
}

void pb_row_init(struct pb_row *row)
{
	memset(row, 0, sizeof(*row));
	pb_row_set_u64(row, PB_COL_schema_version, PB_SCHEMA_VERSION);
}

void pb_row_set_str(struct pb_row *row, enum pb_col col, const char *text)
{
	snprintf(row->cell[col], PB_CELL_MAX, "%s", text ? text : "");
}

void pb_row_set_u64(struct pb_row *row, enum pb_col col, uint64_t v)
{
	snprintf(row->cell[col], PB_CELL_MAX, "%" PRIu64, v);
}

void pb_row_set_i64(struct pb_row *row, enum pb_col col, int64_t v)
{
	snprintf(row->cell[col], PB_CELL_MAX, "%" PRId64, v);
}

void pb_row_set_double(struct pb_row *row, enum pb_col col, double v)
{
	if (!isfinite(v)) {
		row->cell[col][0] = '\0';
		return;
	}
	/*
	 * 9 significant digits at any magnitude: fixed decimals would print
	 * 0.000082 Gbit/s with two significant digits, and a compare of two
	 * such numbers would see rounding as a change.
	 */
	snprintf(row->cell[col], PB_CELL_MAX, "%.*g", PB_CSV_DIGITS, v);
}

void pb_row_set_lat_stats(struct pb_row *row, const struct pb_stats *us)
{
	pb_row_set_double(row, PB_COL_lat_us_min, us->min);
	pb_row_set_double(row, PB_COL_lat_us_p50, us->p50);
	pb_row_set_double(row, PB_COL_lat_us_p90, us->p90);
	pb_row_set_double(row, PB_COL_lat_us_p99, us->p99);
	pb_row_set_double(row, PB_COL_lat_us_p999, us->p999);
	pb_row_set_double(row, PB_COL_lat_us_max, us->max);
	pb_row_set_double(row, PB_COL_lat_us_mean, us->mean);
	pb_row_set_double(row, PB_COL_lat_us_stdev, us->stdev);
}

void pb_row_add_flag(struct pb_row *row, const char *flag)
{
	char *cell = row->cell[PB_COL_flags];
	size_t len = strlen(cell);

	snprintf(cell + len, PB_CELL_MAX - len, "%s%s", len ? ";" : "", flag);
}

static int pb_csv_put_cell(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n"))
		return fputs(s, f) < 0 ? -EIO : 0;
	if (fputc('"', f) == EOF)
		return -EIO;
	for (; *s; s++) {
		if (*s == '"' && fputc('"', f) == EOF)
			return -EIO;
		if (fputc(*s, f) == EOF)
			return -EIO;
	}
	return fputc('"', f) == EOF ? -EIO : 0;
}

int pb_csv_write_header(FILE *f)
{
	for (int c = 0; c < PB_COL_COUNT; c++) {
		if ((c && fputc(',', f) == EOF) || fputs(pb_col_names[c], f) < 0)
			return -EIO;
	}
	return fputc('\n', f) == EOF ? -EIO : 0;
}

int pb_csv_write_row(FILE *f, const struct pb_row *row)
{
	for (int c = 0; c < PB_COL_COUNT; c++) {
		if (c && fputc(',', f) == EOF)
			return -EIO;
		if (pb_csv_put_cell(f, row->cell[c]))
			return -EIO;
	}
	if (fputc('\n', f) == EOF || fflush(f))
		return -EIO;
	return 0;
}

void pb_schema_print(FILE *f)
{
	fprintf(f, "pairbench-schema %d\n", PB_SCHEMA_VERSION);
	for (int c = 0; c < PB_COL_COUNT; c++)
		fprintf(f, "%s\t%s\n", pb_col_names[c], pb_col_descs[c]);
}
