/*-------------------------------------------------------------------------
 *
 * tr_family.c
 *	  Registry of model families, keyed by the name stored in the SQL
 *	  catalog's family column, and validation of their parameters.
 *
 * Each family lives in its own file (tr_softmax.c, tr_mlp.c, ...) and
 * exports one const TrFamily.  Adding a family means adding it to the
 * table below; the order is the order of --list-families.
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_family.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "trainer/trainer.h"

extern const TrFamily TrFamilySoftmax;
extern const TrFamily TrFamilyMlp;
extern const TrFamily TrFamilyGnb;
extern const TrFamily TrFamilyKnn;
extern const TrFamily TrFamilyLinearSvm;
extern const TrFamily TrFamilyRidge;
extern const TrFamily TrFamilyRandomForest;
extern const TrFamily TrFamilyGbt;
extern const TrFamily TrFamilyCnn;

static const TrFamily *const families[] = {
	&TrFamilySoftmax,
	&TrFamilyMlp,
	&TrFamilyGnb,
	&TrFamilyKnn,
	&TrFamilyLinearSvm,
	&TrFamilyRidge,
	&TrFamilyRandomForest,
	&TrFamilyGbt,
	&TrFamilyCnn,
};

#define NFAMILIES ((int) (sizeof(families) / sizeof(families[0])))

/* the family called name, or NULL */
const TrFamily *
TrFamilyLookup(const char *name)
{
	if (name == NULL)
		return NULL;
	for (int i = 0; i < NFAMILIES; i++)
		if (strcmp(families[i]->name, name) == 0)
			return families[i];
	return NULL;
}

void
TrFamilyList(void (*cb) (const TrFamily *fam, void *arg), void *arg)
{
	for (int i = 0; i < NFAMILIES; i++)
		cb(families[i], arg);
}

/* is v a JSON integer, or a double without a fractional part? */
static int
IsIntegral(json_object *v, double *out)
{
	if (json_object_is_type(v, json_type_int))
	{
		*out = (double) json_object_get_int64(v);
		return 1;
	}
	if (json_object_is_type(v, json_type_double))
	{
		double		x = json_object_get_double(v);

		*out = x;
		return isfinite(x) && x == floor(x);
	}
	return 0;
}

/* "a|b|c" contains s as a whole alternative? */
static int
InChoices(const char *choices, const char *s)
{
	size_t		n = strlen(s);
	const char *p = choices;

	while (p != NULL && *p)
	{
		const char *bar = strchr(p, '|');
		size_t		len = bar ? (size_t) (bar - p) : strlen(p);

		if (len == n && strncmp(p, s, n) == 0)
			return 1;
		p = bar ? bar + 1 : NULL;
	}
	return 0;
}

/*
 * Check params against the family's declared list: it must be an object
 * (or NULL), every key known, every value of the declared type and range.
 * A typo in a catalog entry fails the run with a message instead of
 * silently training with the default.
 */
int
TrParamsValidate(const TrFamily *fam, json_object *params, char *err,
				 size_t errlen)
{
	if (params == NULL)
		return 0;
	if (!json_object_is_type(params, json_type_object))
	{
		snprintf(err, errlen, "params for family \"%s\" must be a JSON object",
				 fam->name);
		return -1;
	}
	json_object_object_foreach(params, key, val)
	{
		const TrParamSpec *spec = NULL;
		double		x;

		for (const TrParamSpec *s = fam->params; s && s->name; s++)
			if (strcmp(s->name, key) == 0)
				spec = s;
		if (spec == NULL)
		{
			char		known[256] = "";

			for (const TrParamSpec *s = fam->params; s && s->name; s++)
			{
				if (known[0])
					strncat(known, ", ", sizeof(known) - strlen(known) - 1);
				strncat(known, s->name, sizeof(known) - strlen(known) - 1);
			}
			snprintf(err, errlen,
					 "unknown parameter \"%s\" for family \"%s\" (known: %s)",
					 key, fam->name, known[0] ? known : "none");
			return -1;
		}
		switch (spec->type)
		{
			case TR_PARAM_INT:
				if (val == NULL || !IsIntegral(val, &x))
				{
					snprintf(err, errlen, "parameter \"%s\" of family \"%s\" must be an integer",
							 key, fam->name);
					return -1;
				}
				break;
			case TR_PARAM_DOUBLE:
				if (val == NULL ||
					!(json_object_is_type(val, json_type_int) ||
					  json_object_is_type(val, json_type_double)))
				{
					snprintf(err, errlen, "parameter \"%s\" of family \"%s\" must be a number",
							 key, fam->name);
					return -1;
				}
				x = json_object_get_double(val);
				break;
			case TR_PARAM_STRING:
				if (val == NULL || !json_object_is_type(val, json_type_string) ||
					!InChoices(spec->choices, json_object_get_string(val)))
				{
					snprintf(err, errlen, "parameter \"%s\" of family \"%s\" must be one of %s",
							 key, fam->name, spec->choices);
					return -1;
				}
				continue;
			case TR_PARAM_INT_LIST:
				{
					int			n;

					if (val != NULL && IsIntegral(val, &x))
					{
						n = 1;
						goto check_range;
					}
					if (val == NULL || !json_object_is_type(val, json_type_array) ||
						(n = (int) json_object_array_length(val)) < 1 || n > 8)
					{
						snprintf(err, errlen,
								 "parameter \"%s\" of family \"%s\" must be a list of 1 to 8 integers",
								 key, fam->name);
						return -1;
					}
					for (int i = 0; i < n; i++)
					{
						json_object *e = json_object_array_get_idx(val, i);

						if (e == NULL || !IsIntegral(e, &x) || x < spec->lo || x > spec->hi)
						{
							snprintf(err, errlen,
									 "parameter \"%s\" of family \"%s\": entries must be integers in [%g, %g]",
									 key, fam->name, spec->lo, spec->hi);
							return -1;
						}
					}
					continue;
				}
		}
check_range:
		if (!isfinite(x) || x < spec->lo || x > spec->hi)
		{
			snprintf(err, errlen, "parameter \"%s\" of family \"%s\" is %g, outside [%g, %g]",
					 key, fam->name, x, spec->lo, spec->hi);
			return -1;
		}
	}
	return 0;
}
