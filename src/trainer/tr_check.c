/*-------------------------------------------------------------------------
 *
 * tr_check.c
 *	  easeml-trainer --check-model: can this trainer train a model row?
 *
 *	 easeml-trainer --check-model FAMILY [--params JSON] [--kinds K[,K]]
 *					[--needs-image]
 *
 * The families and their parameters are defined once, by the trainer
 * (tr_family.c and each family's parameter list).  The catalog asks the
 * trainer itself when a model row is written (easeml._check_model, run by
 * a trigger on easeml.models), and the live trainer asks the same question
 * before it reads any data, so the two can never disagree.  Prints nothing
 * and exits 0 when the model is fine; prints the reason on one line and
 * exits EASEML_EXIT_MODEL otherwise.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_check.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>

#include "trainer.h"
#include "core/trainer_protocol.h"
#include "tr_check.h"
#include "tr_ensemble.h"

static void
AppendName(const TrFamily *fam, void *arg)
{
	char	   *buf = arg;

	if (buf[0])
		strncat(buf, ", ", 255 - strlen(buf));
	strncat(buf, fam->name, 255 - strlen(buf));
}

/* is kind one of the comma-separated kinds? */
static int
HasKind(const char *kinds, const char *kind)
{
	size_t		n = strlen(kind);

	for (const char *p = kinds; p && *p; p = strchr(p, ','), p = p ? p + 1 : NULL)
		if (strncmp(p, kind, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

/*
 * Check a model: the family is known, supports every kind listed
 * ("classification,regression"; NULL skips the check), an image family is
 * marked needs_image, and the parameters are those the family declares.
 * Returns 0, or -1 with the reason in err.
 */
int
TrModelCheck(const char *family, json_object *params, const char *kinds,
			 int needs_image, char *err, size_t errlen)
{
	const TrFamily *fam = TrFamilyLookup(family);

	/*
	 * A custom trainer's command (tr_external.c) takes any kind of task and
	 * any parameters: they are handed to it, and it answers for them.
	 */
	if (family != NULL && strcmp(family, EASEML_FAMILY_EXTERNAL) == 0)
		return 0;
	/* an ensemble of a task's runs (tr_ensemble.h): its only parameter */
	if (family != NULL && strcmp(family, TR_ENSEMBLE_FAMILY) == 0 && params == NULL)
		return 0;
	if (family != NULL && strcmp(family, TR_ENSEMBLE_FAMILY) == 0)
	{
		json_object_object_foreach(params, key, val)
		{
			if (strcmp(key, "steps") != 0 || !json_object_is_type(val, json_type_int) ||
				json_object_get_int(val) < 1 || json_object_get_int(val) > TR_ENSEMBLE_MAX_STEPS)
			{
				snprintf(err, errlen, "family \"%s\" takes one parameter, steps (1 to %d)",
						 family, TR_ENSEMBLE_MAX_STEPS);
				return -1;
			}
		}
		return 0;
	}
	if (fam == NULL)
	{
		char		known[256] = "";

		TrFamilyList(AppendName, known);
		snprintf(err, errlen, "unknown model family \"%s\" (known: %s)",
				 family ? family : "", known);
		return -1;
	}
	if (kinds != NULL)
	{
		if (HasKind(kinds, "classification") && !fam->supports_classification)
		{
			snprintf(err, errlen, "family \"%s\" cannot train classification tasks", fam->name);
			return -1;
		}
		if (HasKind(kinds, "regression") && !fam->supports_regression)
		{
			snprintf(err, errlen, "family \"%s\" cannot train regression tasks", fam->name);
			return -1;
		}
	}
	if (fam->needs_image && !needs_image)
	{
		snprintf(err, errlen, "family \"%s\" trains on images: the model needs needs_image = true",
				 fam->name);
		return -1;
	}
	return TrParamsValidate(fam, params, err, errlen) == 0 ? 0 : -1;
}

int
TrCheckModelMain(int argc, char **argv)
{
	const char *family = NULL;
	const char *params_text = NULL;
	const char *kinds = NULL;
	int			needs_image = 0;
	json_object *params = NULL;
	char		err[TR_ERRLEN];
	int			rc;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], EASEML_ARG_CHECK_MODEL) == 0 && i + 1 < argc)
			family = argv[++i];
		else if (strcmp(argv[i], "--params") == 0 && i + 1 < argc)
			params_text = argv[++i];
		else if (strcmp(argv[i], "--kinds") == 0 && i + 1 < argc)
			kinds = argv[++i];
		else if (strcmp(argv[i], "--needs-image") == 0)
			needs_image = 1;
		else
		{
			fprintf(stderr, "usage: easeml-trainer --check-model FAMILY [--params JSON] [--kinds K[,K]] [--needs-image]\n");
			return EASEML_EXIT_USAGE;
		}
	}
	if (family == NULL)
	{
		fprintf(stderr, "usage: easeml-trainer --check-model FAMILY [--params JSON] [--kinds K[,K]] [--needs-image]\n");
		return EASEML_EXIT_USAGE;
	}
	if (params_text != NULL)
	{
		params = TrJsonParse(params_text);
		if (params == NULL || !json_object_is_type(params, json_type_object))
		{
			printf("params must be a JSON object\n");
			json_object_put(params);
			return EASEML_EXIT_MODEL;
		}
	}
	rc = TrModelCheck(family, params, kinds, needs_image, err, sizeof(err));
	if (rc != 0)
		printf("%s\n", err);
	json_object_put(params);
	return rc == 0 ? EASEML_EXIT_OK : EASEML_EXIT_MODEL;
}
