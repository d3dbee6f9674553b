/*-------------------------------------------------------------------------
 *
 * sql_predict_conv.c
 *	  Read one feature's value from a SQL datum the way the trainer
 *	  received it (easeml_trainer.spec's COPY query): numeric features as
 *	  col::float8, categorical ones as col::text, dates and timestamps as
 *	  extract(epoch FROM col).
 *
 * The conversion is the same cast the COPY query applies, found with
 * find_coercion_pathway() once per statement and column type: a boolean
 * category reads 'true' as the trainer saw it (not boolout's 't'), a
 * char(n) loses its trailing blanks, an enum gives its label.  A type with
 * no such cast is a wrongly typed feature, reported with the feature's
 * name and kind.
 *
 * A feature whose source column is boolean was trained on 'true' and
 * 'false'.  Text given for it (a text column of the row, an element of a
 * text[]) is read the way PostgreSQL's boolin reads a boolean: any of its
 * spellings (t, yes, on, 1, f, no, off, 0, ..., in any case, with blanks
 * around) becomes 'true' or 'false'; other text stays as it is, a
 * category the model does not know.
 *
 * IDENTIFICATION
 *	  src/sql/sql_predict_conv.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "parser/parse_coerce.h"
#include "sql_predict.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

/* seconds between 2000-01-01 (PostgreSQL's epoch) and 1970-01-01 */
#define PG_EPOCH_SECONDS ((double) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

static void
WrongType(const PredictTask *pt, int j, Oid type, const char *what, const char *kind,
		  const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("%s \"%s\" is of type %s, and feature \"%s\" of task \"%s\" is %s",
					what, pt->features[j], format_type_be(type), pt->features[j], pt->name, kind),
			 errhint("%s", hint)));
}

/* the cast of type to target: a function, a relabel, or I/O */
static CoercionPathType
CastTo(Oid target, Oid type, Oid *funcid)
{
	if (type == target)
	{
		*funcid = InvalidOid;
		return COERCION_PATH_RELABELTYPE;
	}
	return find_coercion_pathway(target, type, COERCION_EXPLICIT, funcid);
}

static void
BuildText(const PredictTask *pt, int j, Oid type, const char *what, MemoryContext mcxt,
		  PredictConv *conv)
{
	Oid			funcid;
	bool		varlena;

	switch (CastTo(TEXTOID, type, &funcid))
	{
		case COERCION_PATH_RELABELTYPE:
			conv->how = CONV_TEXT;
			return;
		case COERCION_PATH_FUNC:
			conv->how = CONV_TO_TEXT;
			fmgr_info_cxt(funcid, &conv->fn, mcxt);
			return;
		case COERCION_PATH_COERCEVIAIO:
			conv->how = CONV_OUTPUT;
			getTypeOutputInfo(type, &funcid, &varlena);
			fmgr_info_cxt(funcid, &conv->fn, mcxt);
			return;
		default:
			WrongType(pt, j, type, what, "categorical",
					  "A categorical feature takes any value that casts to text.");
	}
}

static void
BuildNumber(const PredictTask *pt, int j, Oid type, const char *what, MemoryContext mcxt,
			PredictConv *conv)
{
	Oid			funcid;

	switch (CastTo(FLOAT8OID, getBaseType(type), &funcid))
	{
		case COERCION_PATH_RELABELTYPE:
			conv->how = CONV_FLOAT8;
			return;
		case COERCION_PATH_FUNC:
			conv->how = CONV_TO_FLOAT8;
			fmgr_info_cxt(funcid, &conv->fn, mcxt);
			return;
		default:
			WrongType(pt, j, type, what, "numeric",
					  "A numeric feature takes a number (a type that casts to float8).");
	}
}

/*
 * How to read feature j from a datum of type (what: "column" or "element",
 * for messages).  Raises a wrong-type error naming the feature.
 */
void
PredictConvBuild(const PredictTask *pt, int j, Oid type, const char *what,
				 MemoryContext mcxt, PredictConv *conv)
{
	EncKind		kind = pt->model->encoders ? pt->model->encoders[j].kind : ENC_NUMERIC;
	Oid			base = getBaseType(type);

	memset(conv, 0, sizeof(*conv));
	if (kind == ENC_ONEHOT || kind == ENC_HASHED)
	{
		BuildText(pt, j, type, what, mcxt, conv);
		/* a boolean reads true or false already; text is read as boolin */
		conv->boolean = base != BOOLOID && PredictFeatureIsBoolean(pt, j);
	}
	else if (kind == ENC_DATE || kind == ENC_TIMESTAMP)
	{
		if (base == DATEOID)
			conv->how = CONV_DATE;
		else if (base == TIMESTAMPOID || base == TIMESTAMPTZOID)
			conv->how = CONV_TIMESTAMP;
		else
			WrongType(pt, j, type, what, kind == ENC_DATE ? "a date" : "a timestamp",
					  "A date or timestamp feature takes a date, timestamp or timestamptz.");
	}
	else
		BuildNumber(pt, j, type, what, mcxt, conv);
}

/*
 * Whether feature j was a boolean column: its source column is (a domain
 * over) boolean, or, where the source column is gone, the model's
 * categories are only 'false' and 'true'.
 */
bool
PredictFeatureIsBoolean(const PredictTask *pt, int j)
{
	const Encoder *e;

	if (OidIsValid(pt->srctypes[j]))
		return getBaseType(pt->srctypes[j]) == BOOLOID;
	if (pt->model->encoders == NULL || pt->model->encoders[j].kind != ENC_ONEHOT)
		return false;
	e = &pt->model->encoders[j];
	for (int i = 0; i < e->n_slots; i++)
		if (!((e->lens[i] == 4 && memcmp(e->values[i], "true", 4) == 0) ||
			  (e->lens[i] == 5 && memcmp(e->values[i], "false", 5) == 0)))
			return false;
	return e->n_slots > 0;
}

/*
 * A boolean spelled as boolin reads it (parse_bool_with_len, after blanks
 * are trimmed) becomes 'true' or 'false', the trainer's text of a boolean;
 * false (and *str unchanged) when it is no boolean.
 */
bool
PredictBoolSpelling(const char **str, size_t *len)
{
	const char *s = *str;
	size_t		n = *len;
	bool		b;

	while (n > 0 && isspace((unsigned char) *s))
	{
		s++;
		n--;
	}
	while (n > 0 && isspace((unsigned char) s[n - 1]))
		n--;
	if (n == 0 || !parse_bool_with_len(s, n, &b))
		return false;
	*str = b ? "true" : "false";
	*len = b ? 4 : 5;
	return true;
}

/*
 * Call a cast function as PostgreSQL does (build_coercion_expression): a
 * cast function may take the target's typmod (-1: text and float8 have
 * none) and whether the cast is explicit (it is: ::text, ::float8) after
 * the value.  Passing only the value would leave it reading arguments that
 * were never set.  A NULL result is a missing value (*isnull).
 */
static Datum
CallCast(PredictConv *conv, Datum v, bool *isnull)
{
	LOCAL_FCINFO(fcinfo, 3);
	Datum		result;
	int			nargs = conv->fn.fn_nargs;

	InitFunctionCallInfoData(*fcinfo, &conv->fn, nargs, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = v;
	fcinfo->args[0].isnull = false;
	if (nargs >= 2)
	{
		fcinfo->args[1].value = Int32GetDatum(-1);
		fcinfo->args[1].isnull = false;
	}
	if (nargs >= 3)
	{
		fcinfo->args[2].value = BoolGetDatum(true);
		fcinfo->args[2].isnull = false;
	}
	result = FunctionCallInvoke(fcinfo);
	*isnull = fcinfo->isnull;
	return result;
}

/* a text datum's bytes (detoasted into the current context if needed) */
static void
TextBytes(Datum t, const char **str, size_t *len)
{
	text	   *tx = DatumGetTextPP(t);

	*str = VARDATA_ANY(tx);
	*len = VARSIZE_ANY_EXHDR(tx);
}

/* the feature's value: num for numbers and dates, str and len for categories */
void
PredictConvApply(PredictConv *conv, Datum v, bool isnull, double *num,
				 const char **str, size_t *len)
{
	*num = NAN;
	*str = NULL;
	*len = 0;
	if (isnull)
		return;
	switch (conv->how)
	{
		case CONV_FLOAT8:
			*num = DatumGetFloat8(v);
			break;
		case CONV_TO_FLOAT8:
			{
				bool		null;
				Datum		d = CallCast(conv, v, &null);

				if (!null)
					*num = DatumGetFloat8(d);
				break;
			}
		case CONV_DATE:
			{
				DateADT		d = DatumGetDateADT(v);

				*num = DATE_NOT_FINITE(d) ? (DATE_IS_NOBEGIN(d) ? -INFINITY : INFINITY) :
					(double) d * SECS_PER_DAY + PG_EPOCH_SECONDS;
				break;
			}
		case CONV_TIMESTAMP:
			{
				Timestamp	ts = DatumGetTimestamp(v);

				*num = TIMESTAMP_NOT_FINITE(ts) ? (TIMESTAMP_IS_NOBEGIN(ts) ? -INFINITY : INFINITY) :
					(double) ts / USECS_PER_SEC + PG_EPOCH_SECONDS;
				break;
			}
		case CONV_TEXT:
			TextBytes(v, str, len);
			break;
		case CONV_TO_TEXT:
			{
				bool		null;
				Datum		d = CallCast(conv, v, &null);

				if (!null)
					TextBytes(d, str, len);
				break;
			}
		case CONV_OUTPUT:
			*str = OutputFunctionCall(&conv->fn, v);
			*len = strlen(*str);
			break;
	}
	if (conv->boolean && *str != NULL)
		(void) PredictBoolSpelling(str, len);
}
