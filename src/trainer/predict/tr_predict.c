/*-------------------------------------------------------------------------
 *
 * tr_predict.c
 *	  Load a model artifact and predict with it (see tr_predict.h): the
 *	  header, the class names, the preprocessing, and the dispatch to the
 *	  family's predictor (tr_predict_linear.c, tr_predict_net.c,
 *	  tr_predict_tree.c).
 *
 * IDENTIFICATION
 *	  src/trainer/predict/tr_predict.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_predict.h"

typedef int (*TrLoadFn) (const TrLoad *ld, TrModel *m);

/* how many class names are read between two tr_load_interrupted calls */
#define CLASSES_PER_CHECK 4096

int			(*tr_load_interrupted) (void) = NULL;

static const struct
{
	const char *family;
	TrLoadFn	load;
}			loaders[] =
{
	{"softmax", TrLoadLinear},
	{"ridge", TrLoadLinear},
	{"linear_svm", TrLoadLinear},
	{"gnb", TrLoadGnb},
	{"knn", TrLoadKnn},
	{"mlp", TrLoadMlp},
	{"cnn", TrLoadCnn},
	{"random_forest", TrLoadTrees},
	{"gbt", TrLoadTrees},
};

int
TrLoadFail(const TrLoad *ld, int status, const char *fmt,...)
{
	va_list		ap;

	if (ld->err != NULL && ld->errlen > 0)
	{
		va_start(ap, fmt);
		vsnprintf(ld->err, ld->errlen, fmt, ap);
		va_end(ap);
	}
	return status;
}

int
TrLoadTensor(const TrLoad *ld, const char *name, int dtype, int ndim,
			 int64_t *dims, void **out)
{
	TrArtTensor t;

	*out = NULL;
	if (!TrArtifactTensor(ld->blob, ld->len, ld->hdr, name, &t))
		return TrLoadFail(ld, TR_ART_BAD, "the %s model has no tensor \"%s\"",
						  ld->hdr->family, name);
	if (t.dtype != dtype || t.ndim != ndim)
		return TrLoadFail(ld, TR_ART_BAD, "tensor \"%s\" has type %d and %d dimensions, expected %d and %d",
						  name, t.dtype, t.ndim, dtype, ndim);
	for (int i = 0; i < ndim; i++)
	{
		if (dims[i] >= 0 && t.dims[i] != dims[i])
			return TrLoadFail(ld, TR_ART_BAD, "tensor \"%s\" has dimension %d of %lld, expected %lld",
							  name, i + 1, (long long) t.dims[i], (long long) dims[i]);
		dims[i] = t.dims[i];
	}
	/* +8: a valid pointer for an empty tensor */
	if ((*out = malloc(t.bytes + 8)) == NULL)
		return TrLoadFail(ld, TR_ART_NO_MEMORY, "out of memory loading tensor \"%s\" (%zu bytes)",
						  name, t.bytes);
	memcpy(*out, t.data, t.bytes);
	return TR_ART_OK;
}

void
TrProbaFromScores(const double *z, int k, int n_classes, double *p)
{
	double		mx,
				sum = 0.0;

	if (k == 1)
	{
		/* one logit for two classes: class 1 when it is > 0 */
		double		p1 = z[0] >= 0 ? 1.0 / (1.0 + exp(-z[0])) : exp(z[0]) / (1.0 + exp(z[0]));

		/* rounding must not flip the class: ties (z = 0) go to class 0 */
		if (z[0] > 0 && p1 <= 0.5)
			p1 = nextafter(0.5, 1.0);
		else if (!(z[0] > 0) && p1 > 0.5)
			p1 = 0.5;
		p[0] = 1.0 - p1;
		p[1] = p1;
		return;
	}
	mx = z[0];
	for (int c = 1; c < k; c++)
		mx = z[c] > mx ? z[c] : mx;
	for (int c = 0; c < k; c++)
		sum += (p[c] = exp(z[c] - mx));
	for (int c = 0; c < n_classes; c++)
		p[c] /= sum;
}

/* the preprocessing: the encoders, or 0.1.0's mean and scale */
static int
LoadPrep(const TrLoad *ld, TrModel *m)
{
	TrArtTensor t;
	int64_t		dims[1] = {m->d};
	int			rc,
				width = 0;

	if (TrArtifactTensor(ld->blob, ld->len, ld->hdr, "prep.encoders", &t))
	{
		if (t.dtype != TR_DT_U8 || t.ndim != 1)
			return TrLoadFail(ld, TR_ART_BAD, "tensor \"prep.encoders\" is not a byte string");
		rc = EncListRead(t.data, t.bytes, &m->encoders, &m->n_raw, ld->err, ld->errlen);
		if (rc != 0)
			return rc;
		for (int j = 0; j < m->n_raw; j++)
			width += m->encoders[j].n_out;
		if (width != m->d)
			return TrLoadFail(ld, TR_ART_BAD, "the encoders write %d features, the model reads %d",
							  width, m->d);
		return TR_ART_OK;
	}
	m->n_raw = m->d;
	if ((rc = TrLoadTensor(ld, "prep.mean", TR_DT_F64, 1, dims, (void **) &m->mean)) != 0 ||
		(rc = TrLoadTensor(ld, "prep.scale", TR_DT_F64, 1, dims, (void **) &m->scale)) != 0)
		return rc;
	for (int j = 0; j < m->d; j++)
		if (!isfinite(m->mean[j]) || !isfinite(m->scale[j]))
			return TrLoadFail(ld, TR_ART_BAD, "feature %d has a non-finite standardisation", j + 1);
	return TR_ART_OK;
}

/* the class names, in one pass over them (the format allows 2^20) */
static int
LoadClasses(const TrLoad *ld, TrModel *m)
{
	TrArtClasses it;

	if (m->n_classes == 0)
		return TR_ART_OK;
	if ((m->class_names = calloc(m->n_classes, sizeof(char *))) == NULL)
		return TrLoadFail(ld, TR_ART_NO_MEMORY, "out of memory loading %d class names", m->n_classes);
	TrArtifactClassesBegin(ld->blob, ld->len, ld->hdr, &it);
	for (int c = 0; c < m->n_classes; c++)
	{
		int			rc = TrArtifactClassCopy(&it, &m->class_names[c]);

		if (rc != 0)
			return TrLoadFail(ld, rc, "class name %d is unreadable", c + 1);
		if (c > 0 && strcmp(m->class_names[c - 1], m->class_names[c]) >= 0)
			return TrLoadFail(ld, TR_ART_BAD, "the class names are not sorted and distinct");
		if (c % CLASSES_PER_CHECK == CLASSES_PER_CHECK - 1 &&
			tr_load_interrupted != NULL && tr_load_interrupted())
			return TrLoadFail(ld, TR_ART_CANCELED, "the load was canceled");
	}
	return TR_ART_OK;
}

int
TrModelLoad(const unsigned char *blob, size_t len, TrModel **out, char *err,
			size_t errlen)
{
	TrArtHeader hdr;
	TrLoad		ld = {blob, len, &hdr, err, errlen};
	TrModel    *m;
	TrLoadFn	load = NULL;
	int			rc;

	*out = NULL;
	if ((rc = TrArtifactCheck(blob, len, &hdr, err, errlen)) != TR_ART_OK)
		return rc;
	for (size_t i = 0; i < sizeof(loaders) / sizeof(loaders[0]); i++)
		if (strcmp(loaders[i].family, hdr.family) == 0)
			load = loaders[i].load;
	if (load == NULL)
		return TrLoadFail(&ld, TR_ART_UNSUPPORTED,
						  "models of family \"%s\" cannot predict (a custom trainer's artifact is opaque to easeml)",
						  hdr.family);
	if ((m = calloc(1, sizeof(TrModel))) == NULL)
		return TrLoadFail(&ld, TR_ART_NO_MEMORY, "out of memory loading a model");
	strcpy(m->family, hdr.family);
	m->kind = hdr.kind;
	m->d = hdr.d;
	m->n_classes = hdr.n_classes;
	m->channels = hdr.channels;
	m->height = hdr.height;
	m->width = hdr.width;
	m->n_out = hdr.kind == 0 ? hdr.n_classes : 1;
	if ((rc = LoadClasses(&ld, m)) != 0 || (rc = LoadPrep(&ld, m)) != 0 ||
		(rc = load(&ld, m)) != 0)
	{
		TrModelFree(m);
		return rc;
	}
	*out = m;
	return TR_ART_OK;
}

void
TrModelFree(TrModel *m)
{
	if (m == NULL)
		return;
	if (m->class_names != NULL)
		for (int c = 0; c < m->n_classes; c++)
			free(m->class_names[c]);
	free(m->class_names);
	if (m->prep_borrowed)
		m->encoders = NULL;		/* its first member's */
	if (m->encoders != NULL)
		for (int j = 0; j < m->n_raw; j++)
			EncFree(&m->encoders[j]);
	free(m->encoders);
	if (!m->prep_borrowed)
	{
		free(m->mean);
		free(m->scale);
	}
	if (m->free_state != NULL && m->state != NULL)
		m->free_state(m->state);
	free(m);
}

int
TrModelColumnIsCategorical(const TrModel *m, int j)
{
	return m->encoders != NULL && j >= 0 && j < m->n_raw &&
		(m->encoders[j].kind == ENC_ONEHOT || m->encoders[j].kind == ENC_HASHED);
}

int
TrModelEncode(const TrModel *m, const double *num, const char *const *str,
			  const size_t *lens, float *x)
{
	int			unknown = 0;

	if (m->encode != NULL)
		return m->encode(m, num, str, lens, x);
	if (m->encoders == NULL)
	{
		/* 0.1.0: standardise; a missing value is the training mean */
		for (int j = 0; j < m->d; j++)
			x[j] = isnan(num[j]) ? 0.0f : (float) ((num[j] - m->mean[j]) * m->scale[j]);
		return 0;
	}
	for (int j = 0; j < m->n_raw; j++)
	{
		const Encoder *e = &m->encoders[j];

		if (e->kind == ENC_ONEHOT || e->kind == ENC_HASHED)
			unknown += EncApply(e, NAN, str ? str[j] : NULL, str && str[j] ? lens[j] : 0, x);
		else
			EncApply(e, num[j], NULL, 0, x);
		x += e->n_out;
	}
	return unknown;
}

int
TrModelPredict(const TrModel *m, const float *X, int n, double *out)
{
	if (n <= 0)
		return TR_ART_OK;
	return m->predict(m, X, n, out);
}

int
TrModelClass(const TrModel *m, const double *proba)
{
	int			best = 0;

	for (int c = 1; c < m->n_classes; c++)
		if (proba[c] > proba[best])
			best = c;
	return best;
}
