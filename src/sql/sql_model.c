/*-------------------------------------------------------------------------
 *
 * sql_model.c
 *	  easeml._check_model(family, params, kinds, needs_image): can the
 *	  trainer train a model row?  The trigger on easeml.models calls it, so
 *	  an unknown family or a misspelt parameter is refused when the row is
 *	  written instead of failing a run of every task later.  The trainer
 *	  answers itself (src/worker/supervisor.c, SupervisorCheckModel): it alone
 *	  defines the families and their parameters.
 *
 * IDENTIFICATION
 *	  src/sql/sql_model.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "worker/supervisor.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

PG_FUNCTION_INFO_V1(easeml_check_model);

/*
 * easeml._check_model(family text, params jsonb, kinds text[],
 *					   needs_image boolean) returns text: NULL when the
 * trainer can train the model, else its reason.
 */
Datum
easeml_check_model(PG_FUNCTION_ARGS)
{
	char	   *family;
	Jsonb	   *params;
	ArrayType  *kinds;
	bool		needs_image;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	StringInfoData k;
	char	   *reason;

	for (int i = 0; i < 4; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("family, params, kinds and needs_image must not be NULL"),
					 errhint("docs/models.md lists each family's parameters.")));
	family = text_to_cstring(PG_GETARG_TEXT_PP(0));
	params = PG_GETARG_JSONB_P(1);
	kinds = PG_GETARG_ARRAYTYPE_P(2);
	needs_image = PG_GETARG_BOOL(3);
	deconstruct_array(kinds, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	initStringInfo(&k);
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			appendStringInfo(&k, "%s%s", k.len > 0 ? "," : "", TextDatumGetCString(elems[i]));
	reason = SupervisorCheckModel(family,
								  JsonbToCString(NULL, &params->root, VARSIZE(params)),
								  k.data, needs_image);
	if (reason == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(reason));
}
