/*-------------------------------------------------------------------------
 *
 * sql_predict.c
 *	  easeml.predict(), easeml.predict_value() and easeml.predict_proba()
 *	  on a row, a float8[] or a text[] of features (docs/predict.md).
 *
 * Each call site keeps in fn_extra what it resolved on its first call of
 * the statement with each task name (up to SITE_TASKS names): the task and
 * its deployed model (sql_predict_cache.c), how
 * to read each feature from the row type it is given (sql_predict_conv.c),
 * and buffers for one row.  A row is then read, encoded with the model's
 * own encoders and predicted by the predict module the trainer scored
 * with (src/trainer/predict/tr_predict.h), in the calling backend.
 *
 * Each call site also counts the rows it predicted, those with a category
 * the model was not trained on and those with a missing value filled in,
 * and adds the counts to the server's counters when its statement ends
 * (src/module/predict_stats.c).  With strict => true an unknown category is an error
 * instead.
 *
 * IDENTIFICATION
 *	  src/sql/sql_predict.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "module/easeml.h"
#include "module/predict_stats.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "sql_predict.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

PG_FUNCTION_INFO_V1(easeml_predict_row);
PG_FUNCTION_INFO_V1(easeml_predict_float8);
PG_FUNCTION_INFO_V1(easeml_predict_text);
PG_FUNCTION_INFO_V1(easeml_predict_value_row);
PG_FUNCTION_INFO_V1(easeml_predict_value_float8);
PG_FUNCTION_INFO_V1(easeml_predict_value_text);
PG_FUNCTION_INFO_V1(easeml_predict_proba_row);
PG_FUNCTION_INFO_V1(easeml_predict_proba_float8);
PG_FUNCTION_INFO_V1(easeml_predict_proba_text);

typedef enum InputForm
{
	INPUT_ROW,
	INPUT_FLOAT8,
	INPUT_TEXT
} InputForm;

/* How the features of one row type are found: by name, once per type. */
typedef struct RowMap
{
	Oid			type;			/* InvalidOid: not built yet */
	int32		typmod;
	TupleDesc	desc;			/* a copy */
	int		   *att;			/* per feature: index into values */
	PredictConv *conv;			/* per feature */
	Datum	   *values;			/* natts */
	bool	   *nulls;
} RowMap;

/*
 * What one call site resolved for one task name during the statement, in
 * its own memory context (cxt): deleting it drops its hold on the model
 * and adds its counts to the server's.
 */
typedef struct CallSite
{
	MemoryContext cxt;
	PredictTask task;
	RowMap		row;
	PredictConv *textconv;		/* text[] input: dates parsed per source type */
	double	   *num;			/* one raw row */
	const char **str;
	size_t	   *lens;
	float	   *x;				/* its features */
	double	   *out;			/* its outputs */
	bool	   *isbool;			/* per feature: a boolean source column */
	uint64		rows;			/* rows predicted, not yet in the counters */
	uint64		unknown;		/* ... with an unknown category */
	uint64		imputed;		/* ... with a missing value filled in */
	MemoryContextCallback flush;
} CallSite;

/*
 * A call site's task names (fn_extra), most recently used first.  The task
 * argument may change from row to row (CASE ... THEN 's1' ELSE 's2'): each
 * name is resolved once per statement, not once per change, and at most
 * SITE_TASKS names are kept, so the memory and the models a statement holds
 * do not grow with its rows.
 */
#define SITE_TASKS 8

typedef struct CallSites
{
	int			n;
	CallSite   *site[SITE_TASKS];
} CallSites;

/* the statement ends (or fails): add the call site's counts to the server's */
static void
FlushCounts(void *arg)
{
	CallSite   *cs = arg;

	PredictStatsAdd(cs->task.owner, cs->task.task_id, cs->task.run_id, cs->rows,
					cs->unknown, cs->imputed);
	cs->rows = cs->unknown = cs->imputed = 0;
}

/* a new call-site entry for task name, in a child context of mcxt */
static CallSite *
NewSite(const char *name, MemoryContext mcxt)
{
	MemoryContext cxt = AllocSetContextCreate(mcxt, "easeml.predict call site",
											  ALLOCSET_SMALL_SIZES);
	CallSite   *cs = MemoryContextAllocZero(cxt, sizeof(CallSite));
	TrModel    *m;

	cs->cxt = cxt;
	/*
	 * An error (unknown task, no model) must not leave the context, and its
	 * hold on a model, in fn_mcxt: a loop catching errors would pile them up.
	 */
	PG_TRY();
	{
		PredictResolve(name, cxt, &cs->task);
		m = cs->task.model;
		cs->num = MemoryContextAllocZero(cxt, sizeof(double) * (m->n_raw + 1));
		cs->str = MemoryContextAllocZero(cxt, sizeof(char *) * (m->n_raw + 1));
		cs->lens = MemoryContextAllocZero(cxt, sizeof(size_t) * (m->n_raw + 1));
		cs->x = MemoryContextAllocZero(cxt, sizeof(float) * ((Size) m->d + 1));
		cs->out = MemoryContextAllocZero(cxt, sizeof(double) * (m->n_out + 1));
		cs->isbool = MemoryContextAllocZero(cxt, sizeof(bool) * (cs->task.nfeat + 1));
		for (int j = 0; j < cs->task.nfeat; j++)
			cs->isbool[j] = TrModelColumnIsCategorical(m, j) && PredictFeatureIsBoolean(&cs->task, j);
	}
	PG_CATCH();
	{
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	cs->flush.func = FlushCounts;
	cs->flush.arg = cs;
	MemoryContextRegisterResetCallback(cxt, &cs->flush);
	return cs;
}

/* the call site's state for this row's task name, resolved once per name */
static CallSite *
Site(FunctionCallInfo fcinfo)
{
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	CallSites  *sites = fcinfo->flinfo->fn_extra;
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	CallSite   *cs;
	int			i;

	if (sites == NULL)
	{
		sites = MemoryContextAllocZero(mcxt, sizeof(CallSites));
		fcinfo->flinfo->fn_extra = sites;
	}
	for (i = 0; i < sites->n; i++)
		if (strcmp(sites->site[i]->task.name, name) == 0)
			break;
	if (i < sites->n)
		cs = sites->site[i];
	else
	{
		cs = NewSite(name, mcxt);
		/* full: the least recently used name goes (its counts flushed) */
		if (sites->n == SITE_TASKS)
			MemoryContextDelete(sites->site[--sites->n]->cxt);
		i = sites->n++;
	}
	/* to the front */
	memmove(&sites->site[1], &sites->site[0], sizeof(CallSite *) * i);
	sites->site[0] = cs;
	pfree(name);
	return cs;
}

/* find every feature column in a row type, by name */
static void
BuildRowMap(CallSite *cs, TupleDesc desc, Oid type, int32 typmod, MemoryContext mcxt)
{
	RowMap	   *rm = &cs->row;
	PredictTask *pt = &cs->task;

	MemoryContext old = MemoryContextSwitchTo(mcxt);

	rm->desc = CreateTupleDescCopy(desc);
	MemoryContextSwitchTo(old);
	rm->att = MemoryContextAlloc(mcxt, sizeof(int) * (pt->nfeat + 1));
	rm->conv = MemoryContextAllocZero(mcxt, sizeof(PredictConv) * (pt->nfeat + 1));
	rm->values = MemoryContextAlloc(mcxt, sizeof(Datum) * (desc->natts + 1));
	rm->nulls = MemoryContextAlloc(mcxt, sizeof(bool) * (desc->natts + 1));
	for (int j = 0; j < pt->nfeat; j++)
	{
		rm->att[j] = -1;
		for (int a = 0; a < desc->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, a);

			if (!att->attisdropped && strcmp(NameStr(att->attname), pt->features[j]) == 0)
				rm->att[j] = a;
		}
		if (rm->att[j] < 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("the row has no column \"%s\", a feature of task \"%s\"",
							pt->features[j], pt->name),
					 errhint("Pass a row of the task's source, or any row with its feature columns by name (easeml.tasks.features).")));
		PredictConvBuild(pt, j, TupleDescAttr(desc, rm->att[j])->atttypid, "column",
						 mcxt, &rm->conv[j]);
	}
	rm->type = type;
	rm->typmod = typmod;
}

/* the raw features of a row argument */
static void
ReadRow(CallSite *cs, FunctionCallInfo fcinfo)
{
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 1);
	HeapTupleHeader td;
	HeapTupleData tuple;
	Oid			type;
	int32		typmod;

	if (!type_is_rowtype(argtype))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("easeml.predict takes a row, a float8[] or a text[] of features, not %s",
						format_type_be(argtype)),
				 errhint("Write SELECT easeml.predict('task', s) FROM source s, or cast an array to float8[] or text[].")));
	td = PG_GETARG_HEAPTUPLEHEADER(1);
	type = HeapTupleHeaderGetTypeId(td);
	typmod = HeapTupleHeaderGetTypMod(td);
	if (cs->row.type != type || cs->row.typmod != typmod)
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(type, typmod);

		PG_TRY();
		{
			BuildRowMap(cs, desc, type, typmod, cs->cxt);
		}
		PG_FINALLY();
		{
			ReleaseTupleDesc(desc);
		}
		PG_END_TRY();
	}
	tuple.t_len = HeapTupleHeaderGetDatumLength(td);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = td;
	heap_deform_tuple(&tuple, cs->row.desc, cs->row.values, cs->row.nulls);
	for (int j = 0; j < cs->task.nfeat; j++)
	{
		int			a = cs->row.att[j];

		PredictConvApply(&cs->row.conv[j], cs->row.values[a], cs->row.nulls[a],
						 &cs->num[j], &cs->str[j], &cs->lens[j]);
	}
}

/* the elements of a one-dimensional array of nfeat entries */
static void
ArrayElems(const PredictTask *pt, ArrayType *arr, Oid elemtype, Datum **elems,
		   bool **nulls)
{
	int16		typlen;
	bool		byval;
	char		align;
	int			n;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("the features of task \"%s\" must be a one-dimensional array", pt->name)));
	get_typlenbyvalalign(elemtype, &typlen, &byval, &align);
	deconstruct_array(arr, elemtype, typlen, byval, align, elems, nulls, &n);
	if (n != pt->nfeat)
	{
		StringInfoData names;

		initStringInfo(&names);
		for (int j = 0; j < pt->nfeat; j++)
			appendStringInfo(&names, "%s%s", j ? ", " : "", pt->features[j]);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("task \"%s\" has %d features, the array holds %d", pt->name, pt->nfeat, n),
				 errhint("The array holds the features in easeml.tasks.features order: %s.", names.data)));
	}
}

/* float8[]: numbers, dates and timestamps as seconds since 1970 */
static void
ReadFloat8(CallSite *cs, FunctionCallInfo fcinfo)
{
	Datum	   *elems;
	bool	   *nulls;
	PredictTask *pt = &cs->task;

	ArrayElems(pt, PG_GETARG_ARRAYTYPE_P(1), FLOAT8OID, &elems, &nulls);
	for (int j = 0; j < pt->nfeat; j++)
	{
		if (TrModelColumnIsCategorical(pt->model, j))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("feature \"%s\" of task \"%s\" is categorical and cannot be given as float8",
							pt->features[j], pt->name),
					 errhint("Pass the features as text[], or pass a row.")));
		cs->num[j] = nulls[j] ? NAN : DatumGetFloat8(elems[j]);
		cs->str[j] = NULL;
	}
}

/* text[]: each value as the source column's type would read it */
static void
ReadText(CallSite *cs, FunctionCallInfo fcinfo)
{
	Datum	   *elems;
	bool	   *nulls;
	PredictTask *pt = &cs->task;

	ArrayElems(pt, PG_GETARG_ARRAYTYPE_P(1), TEXTOID, &elems, &nulls);
	if (cs->textconv == NULL)
		cs->textconv = MemoryContextAllocZero(cs->cxt,
											  sizeof(PredictConv) * (pt->nfeat + 1));
	for (int j = 0; j < pt->nfeat; j++)
	{
		Oid			type = pt->srctypes[j];
		Oid			typinput,
					typioparam;

		cs->str[j] = NULL;
		cs->num[j] = NAN;
		if (nulls[j])
			continue;
		if (TrModelColumnIsCategorical(pt->model, j))
		{
			text	   *t = DatumGetTextPP(elems[j]);

			cs->str[j] = VARDATA_ANY(t);
			cs->lens[j] = VARSIZE_ANY_EXHDR(t);
			/* a boolean in any of PostgreSQL's spellings */
			if (cs->isbool[j])
				(void) PredictBoolSpelling(&cs->str[j], &cs->lens[j]);
			continue;
		}
		/* a number or date as the source column's type reads it */
		if (!OidIsValid(type))
			type = pt->model->encoders && pt->model->encoders[j].kind >= ENC_DATE ?
				TIMESTAMPTZOID : FLOAT8OID;
		if (cs->textconv[j].how == 0)
			PredictConvBuild(pt, j, type, "source column", cs->cxt,
							 &cs->textconv[j]);
		getTypeInputInfo(type, &typinput, &typioparam);
		PredictConvApply(&cs->textconv[j],
						 OidInputFunctionCall(typinput, TextDatumGetCString(elems[j]), typioparam, -1),
						 false, &cs->num[j], &cs->str[j], &cs->lens[j]);
	}
}

/*
 * An infinite number, date or timestamp is refused, as the declaration
 * refuses one in the source: the model never saw such a value, and no
 * answer for it would mean anything.  NaN and NULL are missing values,
 * filled as in training.
 */
static void
CheckFinite(const CallSite *cs)
{
	const PredictTask *pt = &cs->task;

	for (int j = 0; j < pt->nfeat; j++)
		if (!TrModelColumnIsCategorical(pt->model, j) && isinf(cs->num[j]))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("feature \"%s\" of task \"%s\" is %s",
							pt->features[j], pt->name, cs->num[j] > 0 ? "Infinity" : "-Infinity"),
					 errhint("Pass a finite value, or NULL for a missing value (filled in as in training).")));
}

/*
 * A finite value so far from the training values that the model's single
 * precision overflows once it is scaled, or a model whose outputs overflow,
 * has no meaningful prediction either: refused, never returned as NaN or
 * as the first class.
 */
static void
CheckEncoded(const CallSite *cs)
{
	const PredictTask *pt = &cs->task;
	const TrModel *m = pt->model;
	int			k = 0;

	for (int j = 0; j < pt->nfeat && k < m->d; j++)
	{
		int			width = m->encoders ? m->encoders[j].n_out : 1;

		for (int i = 0; i < width && k < m->d; i++, k++)
			if (!isfinite(cs->x[k]))
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("feature \"%s\" of task \"%s\" is %s, too far from the training values for the model",
								pt->features[j], pt->name, float8out_internal(cs->num[j])),
						 errhint("The model computes in single precision: check the value and its unit.")));
	}
}

static void
CheckOutputs(const CallSite *cs)
{
	for (int c = 0; c < cs->task.model->n_out; c++)
		if (!isfinite(cs->out[c]))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("the model of task \"%s\" has no finite prediction for these features",
							cs->task.name),
					 errhint("A feature is too far from the values the model was trained on: check the values and their units.")));
}

/* at most max bytes of s (whole characters), with "..." when cut */
static void
AppendClipped(StringInfo buf, const char *s, size_t len, int max)
{
	int			n = len > (size_t) max ? pg_mbcliplen(s, (int) max, max) : (int) len;

	appendBinaryStringInfo(buf, s, n);
	if ((size_t) n < len)
		appendStringInfoString(buf, "...");
}

/*
 * strict => true: a category the model was not trained on is an error
 * naming the feature and the value, with the known categories in the
 * hint.  Only one-hot features know their categories; a hashed one (more
 * than 32 training values) takes any value.
 */
static void
UnknownCategory(const CallSite *cs, int j)
{
	const PredictTask *pt = &cs->task;
	const Encoder *e = &pt->model->encoders[j];
	StringInfoData value;
	StringInfoData known;

	initStringInfo(&value);
	AppendClipped(&value, cs->str[j], cs->lens[j], 100);
	initStringInfo(&known);
	for (int i = 0; i < e->n_slots; i++)
	{
		appendStringInfoString(&known, i ? ", " : "");
		AppendClipped(&known, e->values[i], e->lens[i], 40);
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("feature \"%s\" of task \"%s\" has the value \"%s\", a category the model was not trained on",
					pt->features[j], pt->name, value.data),
			 cs->isbool[j] ?
			 errhint("\"%s\" is a boolean: pass true or false (or t, f, yes, no, on, off, 1, 0), or NULL for a missing value.",
					 pt->features[j]) :
			 errhint("The model knows %s; pass one of them (categories match exactly, case included), NULL for a missing value, or strict => false to predict with the category unknown.",
					 known.data)));
}

/*
 * Look at the row read: whether a category is unknown to the model (an
 * error with strict) and whether a value is missing (filled in as in
 * training).
 */
static void
CheckRow(const CallSite *cs, bool strict, bool *unknown, bool *missing)
{
	const PredictTask *pt = &cs->task;
	const TrModel *m = pt->model;

	*unknown = false;
	*missing = false;
	for (int j = 0; j < pt->nfeat; j++)
	{
		if (!TrModelColumnIsCategorical(m, j))
		{
			if (isnan(cs->num[j]))
				*missing = true;
			continue;
		}
		if (cs->str[j] == NULL)
		{
			*missing = true;
			continue;
		}
		if (m->encoders[j].kind == ENC_ONEHOT &&
			EncSlot(&m->encoders[j], cs->str[j], cs->lens[j]) < 0)
		{
			if (strict)
				UnknownCategory(cs, j);
			*unknown = true;
		}
	}
}

/* read the features, encode and predict into cs->out */
static CallSite *
PredictRow(FunctionCallInfo fcinfo, InputForm form)
{
	CallSite   *cs = Site(fcinfo);
	TrModel    *m = cs->task.model;
	bool		strict = PG_NARGS() > 2 && PG_GETARG_BOOL(2);
	bool		unknown;
	bool		missing;

	if (form == INPUT_ROW)
		ReadRow(cs, fcinfo);
	else if (form == INPUT_FLOAT8)
		ReadFloat8(cs, fcinfo);
	else
		ReadText(cs, fcinfo);
	CheckFinite(cs);
	CheckRow(cs, strict, &unknown, &missing);
	(void) TrModelEncode(m, cs->num, cs->str, cs->lens, cs->x);
	CheckEncoded(cs);
	if (TrModelPredict(m, cs->x, 1, cs->out) != TR_ART_OK)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory predicting")));
	CheckOutputs(cs);
	cs->rows++;
	cs->unknown += unknown;
	cs->imputed += missing;
	return cs;
}

/* predict: the label (as the label column's ::text), or the value as text */
static Datum
Label(FunctionCallInfo fcinfo, InputForm form)
{
	CallSite   *cs = PredictRow(fcinfo, form);
	TrModel    *m = cs->task.model;

	if (m->kind == 1)
		PG_RETURN_TEXT_P(cstring_to_text(float8out_internal(cs->out[0])));
	PG_RETURN_TEXT_P(cstring_to_text(m->class_names[TrModelClass(m, cs->out)]));
}

/* predict_value: a regression task's prediction */
static Datum
Value(FunctionCallInfo fcinfo, InputForm form)
{
	CallSite   *cs = PredictRow(fcinfo, form);

	if (cs->task.model->kind != 1)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("task \"%s\" is a classification task", cs->task.name),
				 errhint("easeml.predict returns its label, easeml.predict_proba its class probabilities.")));
	PG_RETURN_FLOAT8(cs->out[0]);
}

/* predict_proba: {"class": probability, ...} in class order */
static Datum
Proba(FunctionCallInfo fcinfo, InputForm form)
{
	CallSite   *cs = PredictRow(fcinfo, form);
	TrModel    *m = cs->task.model;
	StringInfoData buf;

	if (m->kind != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("task \"%s\" is a regression task and has no class probabilities", cs->task.name),
				 errhint("easeml.predict_value returns its prediction.")));
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int c = 0; c < m->n_classes; c++)
	{
		if (c > 0)
			appendStringInfoString(&buf, ", ");
		escape_json(&buf, m->class_names[c]);
		appendStringInfo(&buf, ": %s", float8out_internal(cs->out[c]));
	}
	appendStringInfoChar(&buf, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}

Datum
easeml_predict_row(PG_FUNCTION_ARGS)
{
	return Label(fcinfo, INPUT_ROW);
}

Datum
easeml_predict_float8(PG_FUNCTION_ARGS)
{
	return Label(fcinfo, INPUT_FLOAT8);
}

Datum
easeml_predict_text(PG_FUNCTION_ARGS)
{
	return Label(fcinfo, INPUT_TEXT);
}

Datum
easeml_predict_value_row(PG_FUNCTION_ARGS)
{
	return Value(fcinfo, INPUT_ROW);
}

Datum
easeml_predict_value_float8(PG_FUNCTION_ARGS)
{
	return Value(fcinfo, INPUT_FLOAT8);
}

Datum
easeml_predict_value_text(PG_FUNCTION_ARGS)
{
	return Value(fcinfo, INPUT_TEXT);
}

Datum
easeml_predict_proba_row(PG_FUNCTION_ARGS)
{
	return Proba(fcinfo, INPUT_ROW);
}

Datum
easeml_predict_proba_float8(PG_FUNCTION_ARGS)
{
	return Proba(fcinfo, INPUT_FLOAT8);
}

Datum
easeml_predict_proba_text(PG_FUNCTION_ARGS)
{
	return Proba(fcinfo, INPUT_TEXT);
}
