/*-------------------------------------------------------------------------
 *
 * tr_util.c
 *	  Small helpers shared by the trainer's model families: the seeded
 *	  random number generator, JSON parameter getters, error and progress
 *	  reporting and scores (the artifact format is tr_artifact*.c).
 *
 * Everything random in the trainer derives from TrRandNext() (splitmix64,
 * Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
 * OOPSLA 2014), so one 64-bit seed reproduces a run bit for bit on the same
 * BLAS build and thread count.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_util.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trainer.h"

/* splitmix64: next 64 random bits; the state may start at any value */
uint64_t
TrRandNext(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* uniform double in [0, 1) with 53 random bits */
double
TrRandUniform(uint64_t *state)
{
	return (double) (TrRandNext(state) >> 11) * 0x1.0p-53;
}

/* standard normal by Box-Muller (one value per call, no cached state) */
double
TrRandNormal(uint64_t *state)
{
	double		u1 = 1.0 - TrRandUniform(state);	/* (0, 1] */
	double		u2 = TrRandUniform(state);

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* uniform integer in [0, n) without modulo bias (Lemire's method) */
uint64_t
TrRandBelow(uint64_t *state, uint64_t n)
{
	unsigned __int128 m;
	uint64_t	l;

	if (n <= 1)
		return 0;
	m = (unsigned __int128) TrRandNext(state) * n;
	l = (uint64_t) m;
	if (l < n)
	{
		uint64_t	t = -n % n;

		while (l < t)
		{
			m = (unsigned __int128) TrRandNext(state) * n;
			l = (uint64_t) m;
		}
	}
	return (uint64_t) (m >> 64);
}

/* Fisher-Yates shuffle of idx[0..n-1] */
void
TrShuffle(int *idx, int n, uint64_t *state)
{
	for (int i = n - 1; i > 0; i--)
	{
		int			j = (int) TrRandBelow(state, (uint64_t) i + 1);
		int			tmp = idx[i];

		idx[i] = idx[j];
		idx[j] = tmp;
	}
}

/*
 * Parameter getters.  TrParamsValidate() has already checked types and
 * ranges when a family runs through TrRunCandidate(), so these only fall
 * back to the default for an absent key (or a wrong type, when a family is
 * called directly, e.g. from a unit test).
 */
int
TrParamInt(json_object *params, const char *key, int dflt)
{
	json_object *v;

	if (params == NULL || !json_object_object_get_ex(params, key, &v) ||
		v == NULL)
		return dflt;
	if (json_object_is_type(v, json_type_int))
		return (int) json_object_get_int64(v);
	if (json_object_is_type(v, json_type_double))
		return (int) json_object_get_double(v);
	return dflt;
}

/*
 * json_tokener_parse(), except that an integer literal too long for 64
 * bits is read as the number it is.  PostgreSQL's jsonb writes 1e308 as
 * 309 digits, which json-c clamps to 2^64 - 1, so a parameter of 1e308
 * would be checked (and reported) as 1.84467e+19; a ".0" after its digits
 * makes json-c read it with strtod.  NULL when the text is not JSON.
 */
json_object *
TrJsonParse(const char *text)
{
	size_t		len = strlen(text);
	/* each literal widened has 19 digits or more and gains 2 bytes */
	char	   *buf = malloc(len + len / 9 + 3);
	char	   *o = buf;
	const char *p = text;
	json_object *obj;

	if (buf == NULL)
		return NULL;
	while (*p)
	{
		if (*p == '"')
		{
			/* a string, escapes included, as it is */
			*o++ = *p++;
			while (*p && *p != '"')
			{
				if (*p == '\\' && p[1])
					*o++ = *p++;
				*o++ = *p++;
			}
			if (*p)
				*o++ = *p++;
		}
		else if (*p == '-' || (*p >= '0' && *p <= '9'))
		{
			const char *start = p;
			int			digits = 0;

			int			integer;

			if (*p == '-')
				p++;
			while (*p >= '0' && *p <= '9')
				p++, digits++;
			integer = *p != '.' && *p != 'e' && *p != 'E';
			/* the fraction and exponent are the same literal's */
			if (*p == '.')
				for (p++; *p >= '0' && *p <= '9'; p++)
					;
			if (*p == 'e' || *p == 'E')
			{
				p++;
				if (*p == '+' || *p == '-')
					p++;
				while (*p >= '0' && *p <= '9')
					p++;
			}
			memcpy(o, start, p - start);
			o += p - start;
			if (digits > 18 && integer)
			{
				*o++ = '.';
				*o++ = '0';
			}
		}
		else
			*o++ = *p++;
	}
	*o = '\0';
	obj = json_tokener_parse(buf);
	free(buf);
	return obj;
}

double
TrParamDouble(json_object *params, const char *key, double dflt)
{
	json_object *v;

	if (params == NULL || !json_object_object_get_ex(params, key, &v) ||
		v == NULL)
		return dflt;
	if (json_object_is_type(v, json_type_int) ||
		json_object_is_type(v, json_type_double))
		return json_object_get_double(v);
	return dflt;
}

const char *
TrParamString(json_object *params, const char *key, const char *dflt)
{
	json_object *v;

	if (params == NULL || !json_object_object_get_ex(params, key, &v) ||
		v == NULL || !json_object_is_type(v, json_type_string))
		return dflt;
	return json_object_get_string(v);
}

/*
 * Integer list parameter (e.g. "hidden": [256, 128]); also accepts a bare
 * integer as a one-element list.  Returns the number of entries written.
 */
int
TrParamIntList(json_object *params, const char *key, int *out, int maxn,
			   const int *dflt, int ndflt)
{
	json_object *v;
	int			n;

	if (params == NULL || !json_object_object_get_ex(params, key, &v) ||
		v == NULL)
		goto use_default;
	if (json_object_is_type(v, json_type_int))
	{
		if (maxn < 1)
			return 0;
		out[0] = (int) json_object_get_int64(v);
		return 1;
	}
	if (!json_object_is_type(v, json_type_array))
		goto use_default;
	n = (int) json_object_array_length(v);
	if (n > maxn)
		n = maxn;
	for (int i = 0; i < n; i++)
		out[i] = (int) json_object_get_int64(json_object_array_get_idx(v, i));
	return n;

use_default:
	n = ndflt < maxn ? ndflt : maxn;
	for (int i = 0; i < n; i++)
		out[i] = dflt[i];
	return n;
}

/* monotonic clock in seconds */
double
TrNow(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/*
 * CPU seconds of the whole process (every thread): the benchmark compares
 * one-thread fits by CPU time, which other work on a shared machine does
 * not inflate the way it inflates wall time
 */
double
TrCpuNow(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* format res->error */
void
TrSetError(TrResult *res, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(res->error, sizeof(res->error), fmt, ap);
	va_end(ap);
}

/* true once SIGTERM (or the caller) has asked the fit to stop */
int
TrCancelled(const TrContext *ctx)
{
	return ctx->cancel != NULL && *ctx->cancel != 0;
}

void
TrReportProgress(const TrContext *ctx, int epoch, double loss)
{
	if (ctx->progress != NULL)
		ctx->progress(ctx->progress_arg, epoch, loss);
}

/* a result with no score yet; NaN marks "not applicable" */
void
TrResultInit(TrResult *res)
{
	memset(res, 0, sizeof(*res));
	res->score = NAN;
	res->train_loss = NAN;
	res->rmse = NAN;
	res->r2 = NAN;
}

void
TrResultFree(TrResult *res)
{
	free(res->artifact);
	res->artifact = NULL;
	res->artifact_len = 0;
	free(res->predictions);
	res->predictions = NULL;
	res->predictions_len = 0;
	if (res->extra != NULL)
		json_object_put(res->extra);
	res->extra = NULL;
}

double
TrAccuracy(const int *pred, const int *y, int n)
{
	long		hit = 0;

	for (int i = 0; i < n; i++)
		hit += (pred[i] == y[i]);
	return n > 0 ? (double) hit / n : 0.0;
}

/*
 * R^2 and RMSE of predictions.  For a constant validation target R^2 is
 * undefined; like scikit-learn we report 1 for a perfect fit, else 0, so
 * the score is never NaN.
 */
void
TrRegressionScore(const double *pred, const double *t, int n,
				  double *r2, double *rmse)
{
	double		mean = 0.0,
				ss_res = 0.0,
				ss_tot = 0.0;

	for (int i = 0; i < n; i++)
		mean += t[i];
	mean /= (n > 0 ? n : 1);
	for (int i = 0; i < n; i++)
	{
		double		e = t[i] - pred[i];
		double		c = t[i] - mean;

		ss_res += e * e;
		ss_tot += c * c;
	}
	*rmse = n > 0 ? sqrt(ss_res / n) : 0.0;
	if (ss_tot > 0.0)
		*r2 = 1.0 - ss_res / ss_tot;
	else
		*r2 = ss_res == 0.0 ? 1.0 : 0.0;
}

/* index of the largest entry; the first one wins ties */
int
TrArgmax(const float *v, int k)
{
	int			best = 0;

	for (int j = 1; j < k; j++)
		if (v[j] > v[best])
			best = j;
	return best;
}

/*
 * Adam's step size at step (from 1) with the bias correction folded in, as
 * scikit-learn does: lr * sqrt(1 - beta2^t) / (1 - beta1^t).  Shared by the
 * CPU step below and the GPU families (their kernel takes this rate).
 */
float
TrAdamRate(double lr, long step)
{
	const double b1 = 0.9,
				b2 = 0.999;

	return (float) (lr * sqrt(1.0 - pow(b2, (double) step)) /
					(1.0 - pow(b1, (double) step)));
}

/*
 * One Adam step (beta1 0.9, beta2 0.999, eps 1e-8) over n parameters, with
 * the bias correction folded into the step size as scikit-learn does;
 * step counts from 1.  Shared by the mlp and cnn families.
 */
void
TrAdamStep(float *theta, const float *grad, float *m1, float *m2, size_t n,
		   long step, double lr)
{
	const float b1f = 0.9f,
				b2f = 0.999f,
				epsf = 1e-8f;
	float		lrf = TrAdamRate(lr, step);

	for (size_t i = 0; i < n; i++)
	{
		float		g = grad[i];

		m1[i] = b1f * m1[i] + (1.0f - b1f) * g;
		m2[i] = b2f * m2[i] + (1.0f - b2f) * g * g;
		theta[i] -= lrf * m1[i] / (sqrtf(m2[i]) + epsf);
	}
}
