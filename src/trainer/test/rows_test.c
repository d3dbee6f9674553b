/*-------------------------------------------------------------------------
 *
 * rows_test.c
 *	  Unit tests of the compact rows of a loaded table (tr_rows.c) and of
 *	  TrPrepare() writing the prepared rows over them (take_rows), the two
 *	  things that keep the live trainer near the size of its float32 data.
 *	  Called from tr_test.c's main.
 *
 * IDENTIFICATION
 *	  src/trainer/test/rows_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "tr_test.h"


/* cell j of row i of the test tables */
static double
Value(int i, int j, int with_nan)
{
	switch (j)
	{
		case 0:
			/* a million plus thousandths: float alone keeps 1/16 of it */
			return 1e6 + 0.001 * ((i * 7919) % 1000);
		case 1:
			return with_nan && i % 9 == 4 ? NAN : (double) (i % 13) - 6.0;
		case 2:
			return sin(i * 0.37) * 1e-3;
		default:
			return (double) (i % 5);
	}
}

/* a compact table of n rows, d = 4 features and three classes */
static int
CompactTable(TrTable *t, int n, int with_nan, char *err, size_t errlen)
{
	double		row[4];

	memset(t, 0, sizeof(*t));
	t->d = 4;
	t->kind = TR_KIND_CLASSIFICATION;
	t->labels = calloc(n, sizeof(char *));
	if (t->labels == NULL || TrRowsBegin(t) != 0)
		return -1;
	for (int i = 0; i < n; i++)
	{
		for (int j = 0; j < 4; j++)
			row[j] = Value(i, j, with_nan);
		if (TrRowsAppend(t, row, err, errlen) != 0)
			return -1;
		t->labels[i] = strdup((i % 3) == 0 ? "a" : (i % 3) == 1 ? "b" : "c");
		t->n++;
	}
	return TrRowsFinish(t, err, errlen);
}

/* compact cells read back as the numbers appended, dates exactly */
static void
TestCompactCells(void)
{
	TrTable		t;
	char		err[256] = "";
	double		worst = 0.0;
	int			nan_ok = 1;
	int			kinds[2] = {TR_COL_NUMERIC, TR_COL_DATE};
	double		row[2];
	int			exact = 1;

	CHECK(CompactTable(&t, 3000, 1, err, sizeof(err)) == 0, "compact rows: 3000 rows load (%s)", err);
	for (int i = 0; i < t.n; i++)
		for (int j = 0; j < 4; j++)
		{
			double		x = Value(i, j, 1);

			if (isnan(x))
				nan_ok &= isnan(TrCell(&t, i, j));
			else
				worst = fmax(worst, fabs(TrCell(&t, i, j) - x));
		}
	/* without the offset the error would be up to 1/32 */
	CHECK(worst < 1e-7, "compact rows: cells within 1e-7 of the doubles appended (worst %g)", worst);
	CHECK(nan_ok, "compact rows: NULL cells stay missing");
	CHECK(t.rows->stage == NULL && t.rows->cap == t.n,
		  "compact rows: nothing but the n rows stays allocated after the load");
	TrTableFree(&t);

	/* a date column keeps every second: midnights never round down a day */
	memset(&t, 0, sizeof(t));
	t.d = 2;
	CHECK(TrTableSetKinds(&t, kinds) == 0 && TrRowsBegin(&t) == 0, "compact rows: a table with a date column");
	for (int i = 0; i < 500; i++)
	{
		row[0] = i;
		row[1] = 86400.0 * (i * 97 % 40000) - (i == 7 ? 1.0 : 0.0);
		if (TrRowsAppend(&t, row, err, sizeof(err)) != 0)
			break;
		t.n++;
	}
	TrRowsFinish(&t, err, sizeof(err));
	for (int i = 0; i < t.n; i++)
		exact &= TrCell(&t, i, 1) == 86400.0 * (i * 97 % 40000) - (i == 7 ? 1.0 : 0.0);
	CHECK(t.n == 500 && exact, "compact rows: date cells are exact (%d rows)", t.n);
	TrTableFree(&t);

	/* a value beyond float is an error naming the column */
	memset(&t, 0, sizeof(t));
	t.d = 1;
	row[0] = 1e300;
	err[0] = '\0';
	CHECK(TrRowsBegin(&t) == 0 && TrRowsAppend(&t, row, err, sizeof(err)) == 0 &&
		  (t.n = 1, row[0] = -1e300, TrRowsAppend(&t, row, err, sizeof(err))) == 0 &&
		  (t.n = 2, TrRowsFinish(&t, err, sizeof(err))) != 0 &&
		  strstr(err, "feature column #1") != NULL,
		  "compact rows: a value beyond float is reported (%s)", err);
	TrTableFree(&t);
}

/* TrPrepare over the compact rows: the same prepared data, no copy */
static void
TestTakeRows(void)
{
	TrTable		a,
				b;
	TrData		da,
				db;
	TrPrepOptions opt;
	char		err[256] = "";
	int			same;

	memset(&opt, 0, sizeof(opt));
	opt.val_fraction = 0.25;
	opt.seed = 11;
	opt.impute = 1;
	CompactTable(&a, 2000, 0, err, sizeof(err));
	CompactTable(&b, 2000, 0, err, sizeof(err));
	CHECK(TrPrepare(&a, &opt, &da, err, sizeof(err)) == 0, "take rows: the copying prepare (%s)", err);
	opt.take_rows = 1;
	CHECK(TrPrepare(&b, &opt, &db, err, sizeof(err)) == 0, "take rows: the prepare in place (%s)", err);
	same = da.n_train == db.n_train && da.n_val == db.n_val && da.d == db.d &&
		memcmp(da.Xtr, db.Xtr, sizeof(float) * (size_t) da.n_train * da.d) == 0 &&
		memcmp(da.Xva, db.Xva, sizeof(float) * (size_t) da.n_val * da.d) == 0 &&
		memcmp(da.ytr, db.ytr, sizeof(int) * da.n_train) == 0 &&
		memcmp(da.yva, db.yva, sizeof(int) * da.n_val) == 0;
	CHECK(same, "take rows: in place gives the copy's rows, bit for bit (%d + %d rows)",
		  db.n_train, db.n_val);
	CHECK(!a.rows->taken && a.rows->F != NULL, "take rows: without take_rows the table keeps its rows");
	CHECK(b.rows->taken && b.rows->F == NULL,
		  "take rows: with take_rows the table's rows became the training rows (no copy)");
	CHECK(TrPrepare(&b, &opt, &da, err, sizeof(err)) != 0 && strstr(err, "already") != NULL,
		  "take rows: a table whose rows were taken is refused (%s)", err);
	TrDataFree(&db);
	TrTableFree(&b);

	/* folds need the table again: never taken */
	opt.folds = 3;
	opt.fold = 1;
	CompactTable(&b, 2000, 0, err, sizeof(err));
	CHECK(TrPrepare(&b, &opt, &db, err, sizeof(err)) == 0 && !b.rows->taken,
		  "take rows: a fold of k leaves the table's rows in place");
	TrDataFree(&db);
	TrTableFree(&b);

	/* a missing-value indicator widens a column: copied, table intact */
	opt.folds = 0;
	opt.fold = 0;
	CompactTable(&b, 2000, 1, err, sizeof(err));
	CHECK(TrPrepare(&b, &opt, &db, err, sizeof(err)) == 0 && db.d == 5 && !b.rows->taken,
		  "take rows: an encoding wider than the table copies (%d features)", db.d);
	TrDataFree(&db);
	TrTableFree(&b);
	TrDataFree(&da);
	TrTableFree(&a);
}

void
TestRows(void)
{
	TestCompactCells();
	TestTakeRows();
}
