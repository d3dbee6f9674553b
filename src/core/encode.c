/*-------------------------------------------------------------------------
 *
 * encode.c
 *	  Column encoders: one-hot and hashed categories, date and timestamp
 *	  parts, missing-value indicators (see encode.h).
 *
 * Parameter bytes (little-endian), after the encoder kind and n_out that
 * the preprocessing section stores for every column:
 *	 u32 flags (bit 0: missing-value indicator)
 *	 f64 fill, u32 fill_slot, u32 n_slots
 *	 one-hot only: n_slots x (u32 length, bytes), strictly increasing
 *	 n_out x (f64 mean, f64 scale)
 *
 * IDENTIFICATION
 *	  src/core/encode.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"

#define ENC_MAX_PARTS 7			/* a timestamp: six date parts and the hour */

static int	Fail(char *err, size_t errlen, int status, const char *fmt,...)
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
EncParts(EncKind kind, int n_slots)
{
	switch (kind)
	{
		case ENC_NUMERIC:
			return 1;
		case ENC_ONEHOT:
		case ENC_HASHED:
			return n_slots;
		case ENC_DATE:
			return 6;
		case ENC_TIMESTAMP:
			return 7;
	}
	return -1;
}

/* byte-wise order of two strings given with their lengths */
static int
CmpBytes(const char *a, size_t alen, const char *b, size_t blen)
{
	int			c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

static uint32_t
Fnv1a(const char *s, size_t len)
{
	uint32_t	h = 2166136261u;

	for (size_t i = 0; i < len; i++)
	{
		h ^= (unsigned char) s[i];
		h *= 16777619u;
	}
	return h;
}

int
EncSlot(const Encoder *e, const char *s, size_t len)
{
	if (e->kind == ENC_HASHED)
		return (int) (Fnv1a(s, len) % (uint32_t) e->n_slots);
	if (e->kind == ENC_ONEHOT)
	{
		int			lo = 0,
					hi = e->n_slots - 1;

		while (lo <= hi)
		{
			int			mid = lo + (hi - lo) / 2;
			int			c = CmpBytes(e->values[mid], e->lens[mid], s, len);

			if (c == 0)
				return mid;
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid - 1;
		}
	}
	return -1;
}

/* days since 1970-01-01 of a civil date (H. Hinnant's algorithm) */
static int64_t
DaysFromCivil(int64_t y, int m, int d)
{
	int64_t		era,
				yoe,
				doy,
				doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void
EncDateParts(double seconds, int with_hour, double *out)
{
	/* beyond PostgreSQL's range of dates: clamp, never overflow */
	double		s = fmin(fmax(seconds, -1e13), 1e13);
	int64_t		days = (int64_t) floor(s / 86400.0);
	int64_t		z = days + 719468,
				era = (z >= 0 ? z : z - 146096) / 146097,
				doe = z - era * 146097,
				yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365,
				doy = doe - (365 * yoe + yoe / 4 - yoe / 100),
				mp = (5 * doy + 2) / 153;
	int			d = (int) (doy - (153 * mp + 2) / 5 + 1),
				m = (int) (mp < 10 ? mp + 3 : mp - 9);
	int64_t		y = yoe + era * 400 + (m <= 2);

	out[0] = (double) y;
	out[1] = m;
	out[2] = d;
	out[3] = (double) (((days % 7) + 7 + 3) % 7);	/* 1970-01-01: Thursday */
	out[4] = (double) (days - DaysFromCivil(y, 1, 1) + 1);
	out[5] = (double) days;
	if (with_hour)
		out[6] = (s - (double) days * 86400.0) / 3600.0;
}

int
EncRaw(const Encoder *e, double num, const char *s, size_t len, double *raw)
{
	int			parts = EncParts(e->kind, e->n_slots);
	int			missing,
				unknown = 0;

	for (int j = 0; j < e->n_out; j++)
		raw[j] = 0.0;
	if (e->kind == ENC_ONEHOT || e->kind == ENC_HASHED)
	{
		int			slot;

		missing = s == NULL;
		slot = missing ? e->fill_slot : EncSlot(e, s, len);
		if (slot >= 0)
			raw[slot] = 1.0;
		else
			unknown = 1;
	}
	else
	{
		/* infinite dates ('infinity') count as missing */
		missing = isnan(num) || (e->kind != ENC_NUMERIC && !isfinite(num));
		if (missing)
			num = e->fill;
		if (e->kind == ENC_NUMERIC)
			raw[0] = num;
		else
			EncDateParts(num, e->kind == ENC_TIMESTAMP, raw);
	}
	if (e->indicator)
		raw[parts] = missing ? 1.0 : 0.0;
	return unknown;
}

int
EncApply(const Encoder *e, double num, const char *s, size_t len, float *out)
{
	int			unknown = 0;

	if (e->kind == ENC_ONEHOT || e->kind == ENC_HASHED)
	{
		/* wide: standardise the zeros, then the one slot set */
		int			missing = s == NULL;
		int			slot = missing ? e->fill_slot : EncSlot(e, s, len);

		for (int j = 0; j < e->n_out; j++)
			out[j] = (float) ((0.0 - e->mean[j]) * e->scale[j]);
		if (slot >= 0)
			out[slot] = (float) ((1.0 - e->mean[slot]) * e->scale[slot]);
		else
			unknown = 1;
		if (e->indicator && missing)
			out[e->n_slots] = (float) ((1.0 - e->mean[e->n_slots]) * e->scale[e->n_slots]);
	}
	else
	{
		double		raw[ENC_MAX_PARTS + 1];

		EncRaw(e, num, s, len, raw);
		for (int j = 0; j < e->n_out; j++)
			out[j] = (float) ((raw[j] - e->mean[j]) * e->scale[j]);
	}
	return unknown;
}

void
EncFree(Encoder *e)
{
	if (e->values != NULL)
		for (int i = 0; i < e->n_slots; i++)
			free(e->values[i]);
	free(e->values);
	free(e->lens);
	free(e->mean);
	free(e->scale);
	memset(e, 0, sizeof(*e));
}

/* ---- parameter bytes ---------------------------------------------------- */

typedef struct Buf
{
	unsigned char *p;
	size_t		len;
	size_t		cap;
	int			failed;
} Buf;

static void
Put(Buf *b, const void *v, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n > b->cap)
	{
		size_t		cap = (b->len + n) * 2 + 64;
		unsigned char *p = realloc(b->p, cap);

		if (p == NULL)
		{
			b->failed = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, v, n);
	b->len += n;
}

/* the format is little-endian, like every machine easeml builds on */
static void
PutU32(Buf *b, uint32_t v)
{
	unsigned char c[4] = {v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24};

	Put(b, c, 4);
}

static void
PutF64(Buf *b, double v)
{
	uint64_t	u;
	unsigned char c[8];

	memcpy(&u, &v, 8);
	for (int i = 0; i < 8; i++)
		c[i] = (unsigned char) (u >> (8 * i));
	Put(b, c, 8);
}

int
EncWrite(const Encoder *e, unsigned char **buf, size_t *len)
{
	Buf			b = {0};

	PutU32(&b, e->indicator ? 1 : 0);
	PutF64(&b, e->fill);
	PutU32(&b, (uint32_t) e->fill_slot);
	PutU32(&b, (uint32_t) e->n_slots);
	if (e->kind == ENC_ONEHOT)
		for (int i = 0; i < e->n_slots; i++)
		{
			PutU32(&b, e->lens[i]);
			Put(&b, e->values[i], e->lens[i]);
		}
	for (int j = 0; j < e->n_out; j++)
	{
		PutF64(&b, e->mean[j]);
		PutF64(&b, e->scale[j]);
	}
	if (b.failed)
	{
		free(b.p);
		return ENC_NO_MEMORY;
	}
	*buf = b.p;
	*len = b.len;
	return 0;
}

typedef struct Reader
{
	const unsigned char *p;
	size_t		len;
	size_t		pos;
} Reader;

static int
GetU32(Reader *r, uint32_t *v)
{
	if (r->len - r->pos < 4)
		return -1;
	*v = (uint32_t) r->p[r->pos] | ((uint32_t) r->p[r->pos + 1] << 8) |
		((uint32_t) r->p[r->pos + 2] << 16) | ((uint32_t) r->p[r->pos + 3] << 24);
	r->pos += 4;
	return 0;
}

static int
GetF64(Reader *r, double *v)
{
	uint64_t	u = 0;

	if (r->len - r->pos < 8)
		return -1;
	for (int i = 0; i < 8; i++)
		u |= (uint64_t) r->p[r->pos + i] << (8 * i);
	memcpy(v, &u, 8);
	r->pos += 8;
	return 0;
}

/* the categories of a one-hot encoder, checked sorted and distinct */
static int
ReadValues(Reader *r, Encoder *e, char *err, size_t errlen)
{
	e->values = calloc(e->n_slots, sizeof(char *));
	e->lens = calloc(e->n_slots, sizeof(uint32_t));
	if (e->values == NULL || e->lens == NULL)
		return Fail(err, errlen, ENC_NO_MEMORY, "out of memory reading the categories");
	for (int i = 0; i < e->n_slots; i++)
	{
		uint32_t	n;

		if (GetU32(r, &n) != 0 || n > ENC_MAX_VALUE_LEN || r->len - r->pos < n)
			return Fail(err, errlen, ENC_BAD, "category %d is truncated", i + 1);
		if ((e->values[i] = malloc((size_t) n + 1)) == NULL)
			return Fail(err, errlen, ENC_NO_MEMORY, "out of memory reading the categories");
		memcpy(e->values[i], r->p + r->pos, n);
		e->values[i][n] = '\0';
		e->lens[i] = n;
		r->pos += n;
		if (i > 0 && CmpBytes(e->values[i - 1], e->lens[i - 1], e->values[i], n) >= 0)
			return Fail(err, errlen, ENC_BAD, "the categories are not sorted and distinct");
	}
	return 0;
}

/*
 * Read the parameter bytes of an encoder of the given kind and width.  On
 * failure e is freed and err says why (ENC_BAD: malformed).
 */
int
EncRead(EncKind kind, int n_out, const unsigned char *p, size_t len,
		Encoder *e, char *err, size_t errlen)
{
	Reader		r = {p, len, 0};
	uint32_t	flags,
				fill_slot,
				n_slots;
	int			parts,
				rc = ENC_BAD;

	memset(e, 0, sizeof(*e));
	e->kind = kind;
	if (GetU32(&r, &flags) != 0 || GetF64(&r, &e->fill) != 0 ||
		GetU32(&r, &fill_slot) != 0 || GetU32(&r, &n_slots) != 0)
		return Fail(err, errlen, ENC_BAD, "encoder parameters are truncated");
	if (flags > 1 || n_slots > ENC_MAX_SLOTS ||
		(kind == ENC_ONEHOT || kind == ENC_HASHED ?
		 n_slots < 1 || fill_slot >= n_slots || n_slots > len / 4 :
		 n_slots != 0 || !isfinite(e->fill)) ||
		(parts = EncParts(kind, (int) n_slots)) < 0)
		return Fail(err, errlen, ENC_BAD, "encoder %d has malformed parameters", (int) kind);
	e->indicator = (int) flags;
	e->fill_slot = (int) fill_slot;
	e->n_slots = (int) n_slots;
	e->n_out = n_out;
	if (n_out != parts + e->indicator)
		goto bad_width;
	if (kind == ENC_ONEHOT && (rc = ReadValues(&r, e, err, errlen)) != 0)
		goto fail;
	if ((size_t) n_out > (r.len - r.pos) / 16)
		goto bad_width;
	e->mean = malloc(sizeof(double) * n_out);
	e->scale = malloc(sizeof(double) * n_out);
	if (e->mean == NULL || e->scale == NULL)
	{
		rc = Fail(err, errlen, ENC_NO_MEMORY, "out of memory reading an encoder");
		goto fail;
	}
	for (int j = 0; j < n_out; j++)
		if (GetF64(&r, &e->mean[j]) != 0 || GetF64(&r, &e->scale[j]) != 0 ||
			!isfinite(e->mean[j]) || !isfinite(e->scale[j]))
		{
			rc = Fail(err, errlen, ENC_BAD, "output %d has a malformed standardisation", j + 1);
			goto fail;
		}
	if (r.pos != r.len)
	{
		rc = Fail(err, errlen, ENC_BAD, "encoder parameters have %zu bytes too many",
				  r.len - r.pos);
		goto fail;
	}
	return 0;

bad_width:
	rc = Fail(err, errlen, ENC_BAD, "encoder %d writes %d features, the section says %d",
			  (int) kind, parts + e->indicator, n_out);
fail:
	EncFree(e);
	return rc;
}

/* ---- a list of encoders ------------------------------------------------ */

int
EncListWrite(const Encoder *e, int n, unsigned char **buf, size_t *len)
{
	Buf			b = {0};

	PutU32(&b, (uint32_t) n);
	for (int j = 0; j < n; j++)
	{
		unsigned char *p;
		size_t		plen;

		if (EncWrite(&e[j], &p, &plen) != 0)
		{
			free(b.p);
			return ENC_NO_MEMORY;
		}
		PutU32(&b, (uint32_t) e[j].kind);
		PutU32(&b, (uint32_t) e[j].n_out);
		PutU32(&b, (uint32_t) plen);
		Put(&b, p, plen);
		free(p);
	}
	if (b.failed)
	{
		free(b.p);
		return ENC_NO_MEMORY;
	}
	*buf = b.p;
	*len = b.len;
	return 0;
}

int
EncListRead(const unsigned char *p, size_t len, Encoder **out, int *n,
			char *err, size_t errlen)
{
	Reader		r = {p, len, 0};
	uint32_t	count;
	Encoder    *e;
	int			rc;

	*out = NULL;
	*n = 0;
	/* every encoder takes at least 32 bytes: no huge allocation for a tiny blob */
	if (GetU32(&r, &count) != 0 || count < 1 || count > len / 32)
		return Fail(err, errlen, ENC_BAD, "the encoder list is malformed");
	if ((e = calloc(count, sizeof(Encoder))) == NULL)
		return Fail(err, errlen, ENC_NO_MEMORY, "out of memory reading the encoders");
	for (uint32_t j = 0; j < count; j++)
	{
		uint32_t	kind,
					n_out,
					plen;

		if (GetU32(&r, &kind) != 0 || GetU32(&r, &n_out) != 0 || GetU32(&r, &plen) != 0 ||
			r.len - r.pos < plen || n_out > ENC_MAX_SLOTS + 1)
		{
			rc = Fail(err, errlen, ENC_BAD, "encoder %u is truncated", j + 1);
			goto fail;
		}
		if ((rc = EncRead((EncKind) kind, (int) n_out, r.p + r.pos, plen, &e[j], err, errlen)) != 0)
			goto fail;
		r.pos += plen;
	}
	if (r.pos != r.len)
	{
		rc = Fail(err, errlen, ENC_BAD, "the encoder list has %zu bytes too many", r.len - r.pos);
		goto fail;
	}
	*out = e;
	*n = (int) count;
	return 0;
fail:
	for (uint32_t j = 0; j < count; j++)
		EncFree(&e[j]);
	free(e);
	return rc;
}
