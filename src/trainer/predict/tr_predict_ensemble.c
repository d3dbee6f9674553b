/*-------------------------------------------------------------------------
 *
 * tr_predict_ensemble.c
 *	  Predictions of an ensemble (docs/models.md, "Ensembles"): the
 *	  weighted average of its members' outputs.
 *
 * An ensemble's artifact names its member runs and their weights; the
 * caller (the server's predict cache) loads each member's artifact with
 * TrModelLoad and hands the models to TrEnsembleBuild.  The ensemble
 * reads the task's raw columns like any model: TrModelEncode encodes a
 * row once for each member, with that member's own encoders, into one
 * feature vector (the members' features side by side), and the ensemble's
 * predict function gives each member its slice and averages the outputs:
 * class probabilities (the predicted class is the average's largest, the
 * first on ties) or regression values.
 *
 * Plain C: no PostgreSQL headers, no output.
 *
 * IDENTIFICATION
 *	  src/trainer/predict/tr_predict_ensemble.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_predict.h"

typedef struct EnsembleState
{
	int			n;
	TrModel   **members;
	double	   *weights;		/* sum 1 */
	int		   *offset;			/* each member's first feature */
} EnsembleState;

static void
FreeState(void *arg)
{
	EnsembleState *st = arg;

	for (int i = 0; i < st->n; i++)
		TrModelFree(st->members[i]);
	free(st->members);
	free(st->weights);
	free(st->offset);
	free(st);
}

static int
Fail(char *err, size_t errlen, int status, const char *fmt,...)
	__attribute__((format(printf, 4, 5)));

static int
Fail(char *err, size_t errlen, int status, const char *fmt,...)
{
	va_list		ap;

	if (err != NULL && errlen > 0)
	{
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return status;
}

int
TrEnsembleMembers(const unsigned char *blob, size_t len, int *n, int64_t **runs,
				  double **weights, char *err, size_t errlen)
{
	TrArtHeader hdr;
	TrLoad		ld = {blob, len, &hdr, err, errlen};
	int64_t		dims[1] = {-1};
	double	   *ids = NULL;
	double	   *w = NULL;
	double		sum = 0.0;
	int			rc;

	*n = 0;
	*runs = NULL;
	*weights = NULL;
	if ((rc = TrArtifactCheck(blob, len, &hdr, err, errlen)) != TR_ART_OK)
		return rc;
	if (strcmp(hdr.family, TR_ENSEMBLE_FAMILY) != 0)
		return Fail(err, errlen, TR_ART_UNSUPPORTED, "the model of family \"%s\" is no ensemble",
					hdr.family);
	if ((rc = TrLoadTensor(&ld, "members", TR_DT_F64, 1, dims, (void **) &ids)) != TR_ART_OK)
		return rc;
	if (dims[0] < 1 || dims[0] > TR_ENSEMBLE_MAX_MEMBERS)
	{
		free(ids);
		return Fail(err, errlen, TR_ART_BAD, "an ensemble of %lld members (1 to %d)",
					(long long) dims[0], TR_ENSEMBLE_MAX_MEMBERS);
	}
	if ((rc = TrLoadTensor(&ld, "weights", TR_DT_F64, 1, dims, (void **) &w)) != TR_ART_OK)
	{
		free(ids);
		return rc;
	}
	for (int i = 0; i < (int) dims[0]; i++)
	{
		if (!(ids[i] >= 1 && ids[i] <= 9007199254740992.0 && ids[i] == floor(ids[i])) ||
			!(w[i] >= 0 && isfinite(w[i])))
		{
			free(ids);
			free(w);
			return Fail(err, errlen, TR_ART_BAD, "member %d of the ensemble has no valid run id or weight",
						i + 1);
		}
		sum += w[i];
	}
	if (!(sum > 0) || !isfinite(sum) ||
		(*runs = malloc(sizeof(int64_t) * (size_t) dims[0])) == NULL)
	{
		free(ids);
		free(w);
		return sum > 0 ? Fail(err, errlen, TR_ART_NO_MEMORY, "out of memory") :
			Fail(err, errlen, TR_ART_BAD, "the ensemble's weights sum to 0");
	}
	for (int i = 0; i < (int) dims[0]; i++)
	{
		(*runs)[i] = (int64_t) ids[i];
		w[i] /= sum;
	}
	free(ids);
	*weights = w;
	*n = (int) dims[0];
	return TR_ART_OK;
}

/* each member's encoding of the row, side by side */
static int
EnsembleEncode(const TrModel *m, const double *num, const char *const *str,
			   const size_t *lens, float *x)
{
	const EnsembleState *st = m->state;
	int			unknown = 0;

	for (int i = 0; i < st->n; i++)
	{
		int			u = TrModelEncode(st->members[i], num, str, lens, x + st->offset[i]);

		unknown = u > unknown ? u : unknown;
	}
	return unknown;
}

/* the weighted average of the members' outputs */
static int
EnsemblePredict(const TrModel *m, const float *X, int n, double *out)
{
	const EnsembleState *st = m->state;
	size_t		nout = (size_t) n * m->n_out;
	double	   *tmp = malloc(sizeof(double) * (nout + 1));
	float	   *slice = NULL;
	int			maxd = 1;
	int			rc = TR_ART_OK;

	for (int i = 0; i < st->n; i++)
		maxd = st->members[i]->d > maxd ? st->members[i]->d : maxd;
	slice = malloc(sizeof(float) * ((size_t) n * maxd + 1));
	if (tmp == NULL || slice == NULL)
	{
		free(tmp);
		free(slice);
		return TR_ART_NO_MEMORY;
	}
	memset(out, 0, sizeof(double) * nout);
	for (int i = 0; i < st->n && rc == TR_ART_OK; i++)
	{
		const TrModel *mm = st->members[i];

		if (st->weights[i] == 0)
			continue;
		for (int r = 0; r < n; r++)
			memcpy(slice + (size_t) r * mm->d, X + (size_t) r * m->d + st->offset[i],
				   sizeof(float) * mm->d);
		rc = TrModelPredict(mm, slice, n, tmp);
		for (size_t j = 0; j < nout && rc == TR_ART_OK; j++)
			out[j] += st->weights[i] * tmp[j];
	}
	free(tmp);
	free(slice);
	return rc;
}

/* do two members read the raw columns alike? */
static int
SameColumns(const TrModel *a, const TrModel *b)
{
	if (a->n_raw != b->n_raw || (a->encoders == NULL) != (b->encoders == NULL))
		return 0;
	for (int j = 0; a->encoders != NULL && j < a->n_raw; j++)
		if (a->encoders[j].kind != b->encoders[j].kind)
			return 0;
	return 1;
}

int
TrEnsembleBuild(const unsigned char *blob, size_t len, TrModel **members, int n,
				TrModel **out, char *err, size_t errlen)
{
	TrArtHeader hdr;
	int64_t    *runs = NULL;
	double	   *weights = NULL;
	int			nm = 0;
	int			rc;
	TrModel    *m = NULL;
	EnsembleState *st = NULL;
	int			d = 0;
	TrArtClasses it;

	*out = NULL;
	rc = TrEnsembleMembers(blob, len, &nm, &runs, &weights, err, errlen);
	free(runs);
	if (rc == TR_ART_OK && nm != n)
		rc = Fail(err, errlen, TR_ART_BAD, "the ensemble has %d members, %d were given", nm, n);
	if (rc == TR_ART_OK)
		rc = TrArtifactCheck(blob, len, &hdr, err, errlen);
	for (int i = 0; i < n && rc == TR_ART_OK; i++)
	{
		const TrModel *mm = members[i];

		if (mm == NULL || mm->kind != hdr.kind || mm->n_classes != hdr.n_classes)
			rc = Fail(err, errlen, TR_ART_BAD, "member %d is not a model of the ensemble's kind and classes",
					  i + 1);
		else if (!SameColumns(members[0], mm))
			rc = Fail(err, errlen, TR_ART_BAD, "member %d reads the columns unlike member 1", i + 1);
		if (rc == TR_ART_OK && tr_load_interrupted != NULL && tr_load_interrupted())
			rc = Fail(err, errlen, TR_ART_CANCELED, "the load was canceled");
		/* one pass over the ensemble's names per member */
		TrArtifactClassesBegin(blob, len, &hdr, &it);
		for (int c = 0; c < hdr.n_classes && rc == TR_ART_OK; c++)
		{
			const char *name;
			uint32_t	nlen;

			if (!TrArtifactClassNext(&it, &name, &nlen) ||
				strlen(mm->class_names[c]) != nlen ||
				memcmp(name, mm->class_names[c], nlen) != 0)
				rc = Fail(err, errlen, TR_ART_BAD, "member %d has other classes than the ensemble", i + 1);
		}
		if (rc == TR_ART_OK && d > TR_ART_MAX_FEATURES - mm->d)
			rc = Fail(err, errlen, TR_ART_BAD, "the ensemble's members read too many features");
		if (rc == TR_ART_OK)
			d += mm->d;
	}
	if (rc == TR_ART_OK &&
		((m = calloc(1, sizeof(TrModel))) == NULL ||
		 (st = calloc(1, sizeof(EnsembleState))) == NULL ||
		 (st->offset = malloc(sizeof(int) * n)) == NULL ||
		 (m->class_names = calloc(hdr.n_classes + 1, sizeof(char *))) == NULL))
		rc = Fail(err, errlen, TR_ART_NO_MEMORY, "out of memory loading an ensemble");
	for (int c = 0; c < hdr.n_classes && rc == TR_ART_OK; c++)
		if ((m->class_names[c] = strdup(members[0]->class_names[c])) == NULL)
			rc = Fail(err, errlen, TR_ART_NO_MEMORY, "out of memory loading an ensemble");
	if (rc != TR_ART_OK)
	{
		for (int i = 0; i < n; i++)
			TrModelFree(members[i]);
		free(weights);
		if (st != NULL)
			free(st->offset);
		free(st);
		if (m != NULL)
			TrModelFree(m);
		return rc;
	}
	st->n = n;
	st->members = malloc(sizeof(TrModel *) * n);
	if (st->members == NULL)
	{
		for (int i = 0; i < n; i++)
			TrModelFree(members[i]);
		free(weights);
		free(st->offset);
		free(st);
		TrModelFree(m);
		return Fail(err, errlen, TR_ART_NO_MEMORY, "out of memory loading an ensemble");
	}
	d = 0;
	for (int i = 0; i < n; i++)
	{
		st->members[i] = members[i];
		st->offset[i] = d;
		d += members[i]->d;
	}
	st->weights = weights;
	strcpy(m->family, TR_ENSEMBLE_FAMILY);
	m->kind = hdr.kind;
	m->d = d;
	m->n_classes = hdr.n_classes;
	m->n_out = hdr.kind == 0 ? hdr.n_classes : 1;
	m->n_raw = members[0]->n_raw;
	m->encoders = members[0]->encoders;
	m->mean = members[0]->mean;
	m->scale = members[0]->scale;
	m->prep_borrowed = 1;
	m->encode = EnsembleEncode;
	m->predict = EnsemblePredict;
	m->state = st;
	m->free_state = FreeState;
	*out = m;
	return TR_ART_OK;
}
