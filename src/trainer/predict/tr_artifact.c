/*-------------------------------------------------------------------------
 *
 * tr_artifact.c
 *	  The checked reader of "EASEMLA1" artifacts (see tr_artifact.h and
 *	  docs/models.md §4).
 *
 * Every read goes through a cursor that compares the bytes it needs with
 * the bytes left (len - pos, never pos + n, which could wrap).  A tensor's
 * element count is the product of its dimensions, each checked against
 * what could still fit in the blob before multiplying, so a shape such as
 * [2^62, 4] is rejected instead of wrapping to a small count.
 *
 * IDENTIFICATION
 *	  src/trainer/predict/tr_artifact.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_artifact.h"

unsigned long tr_artifact_class_reads = 0;

typedef struct Cursor
{
	const unsigned char *p;
	size_t		len;
	size_t		pos;
} Cursor;

static int	Fail(char *err, size_t errlen, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

static int
Fail(char *err, size_t errlen, const char *fmt,...)
{
	va_list		ap;

	if (err != NULL && errlen > 0)
	{
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return TR_ART_BAD;
}

size_t
TrDtypeSize(int dtype)
{
	switch (dtype)
	{
		case TR_DT_F32:
		case TR_DT_I32:
			return 4;
		case TR_DT_F64:
			return 8;
		case TR_DT_U8:
			return 1;
	}
	return 0;
}

static int
GetU32(Cursor *c, uint32_t *v)
{
	const unsigned char *b;

	if (c->len - c->pos < 4)
		return -1;
	b = c->p + c->pos;
	*v = (uint32_t) b[0] | ((uint32_t) b[1] << 8) | ((uint32_t) b[2] << 16) |
		((uint32_t) b[3] << 24);
	c->pos += 4;
	return 0;
}

static int
GetI64(Cursor *c, int64_t *v)
{
	uint64_t	u = 0;

	if (c->len - c->pos < 8)
		return -1;
	for (int i = 0; i < 8; i++)
		u |= (uint64_t) c->p[c->pos + i] << (8 * i);
	memcpy(v, &u, 8);
	c->pos += 8;
	return 0;
}

/* a length-prefixed string of at most maxlen bytes */
static int
GetStr(Cursor *c, uint32_t maxlen, const char **s, uint32_t *n)
{
	if (GetU32(c, n) != 0 || *n > maxlen || c->len - c->pos < *n)
		return -1;
	*s = (const char *) c->p + c->pos;
	c->pos += *n;
	return 0;
}

/*
 * One tensor entry at the cursor into t; 1 read, 0 the end marker, or
 * TR_ART_BAD.  The values' bytes are checked to be present.
 */
static int
GetTensor(Cursor *c, TrArtTensor *t, char *err, size_t errlen)
{
	uint32_t	dt,
				nd;
	size_t		esize,
				count = 1;

	memset(t, 0, sizeof(*t));
	if (GetStr(c, TR_ART_MAX_NAME, &t->name, &t->name_len) != 0)
		return Fail(err, errlen, "a tensor name at byte %zu is truncated or too long", c->pos);
	if (t->name_len == 0)
		return 0;
	if (GetU32(c, &dt) != 0 || GetU32(c, &nd) != 0)
		return Fail(err, errlen, "tensor \"%.*s\" is truncated", (int) t->name_len, t->name);
	esize = TrDtypeSize((int) dt);
	if (esize == 0 || nd > TR_ART_MAX_NDIM)
		return Fail(err, errlen, "tensor \"%.*s\" has type %u and %u dimensions",
					(int) t->name_len, t->name, dt, nd);
	t->dtype = (int) dt;
	t->ndim = (int) nd;
	for (uint32_t i = 0; i < nd; i++)
	{
		if (GetI64(c, &t->dims[i]) != 0)
			return Fail(err, errlen, "tensor \"%.*s\" is truncated", (int) t->name_len, t->name);
		if (t->dims[i] < 0)
			return Fail(err, errlen, "tensor \"%.*s\" has a negative dimension",
						(int) t->name_len, t->name);
	}
	/* the values must fit in what is left, so count <= left / esize */
	for (uint32_t i = 0; i < nd; i++)
	{
		uint64_t	dim = (uint64_t) t->dims[i];
		size_t		room = (c->len - c->pos) / esize;

		if (dim != 0 && count > room / dim)
		{
			/* a zero dimension later would still make the tensor empty */
			int			empty = 0;

			for (uint32_t j = i + 1; j < nd; j++)
				empty |= t->dims[j] == 0;
			if (!empty)
				return Fail(err, errlen, "tensor \"%.*s\" claims more values than the %zu bytes left",
							(int) t->name_len, t->name, c->len - c->pos);
			count = 0;
			break;
		}
		count *= (size_t) dim;
	}
	t->count = count;
	t->bytes = count * esize;
	t->data = c->p + c->pos;
	c->pos += t->bytes;
	return 1;
}

/* the header fields after the family name, checked for plausibility */
static int
GetHeader(Cursor *c, TrArtHeader *h, char *err, size_t errlen)
{
	uint32_t	v[6];

	for (int i = 0; i < 6; i++)
		if (GetU32(c, &v[i]) != 0)
			return Fail(err, errlen, "the artifact header is truncated");
	if (v[0] > 1 || v[1] > TR_ART_MAX_FEATURES || v[2] > TR_ART_MAX_CLASSES ||
		v[3] > TR_ART_MAX_FEATURES || v[4] > TR_ART_MAX_FEATURES || v[5] > TR_ART_MAX_FEATURES)
		return Fail(err, errlen, "the artifact header is out of range (kind %u, %u features, %u classes)",
					v[0], v[1], v[2]);
	h->kind = (int) v[0];
	h->d = (int) v[1];
	h->n_classes = (int) v[2];
	h->channels = (int) v[3];
	h->height = (int) v[4];
	h->width = (int) v[5];
	if (h->channels > 0 &&
		(uint64_t) h->channels * (uint64_t) h->height * (uint64_t) h->width != (uint64_t) h->d)
		return Fail(err, errlen, "the image shape %dx%dx%d does not match %d features",
					h->channels, h->height, h->width, h->d);
	if ((h->kind == 0) != (h->n_classes >= 2))
		return Fail(err, errlen, "a %s artifact with %d classes",
					h->kind == 0 ? "classification" : "regression", h->n_classes);
	return 0;
}

int
TrArtifactCheck(const unsigned char *blob, size_t len, TrArtHeader *hdr,
				char *err, size_t errlen)
{
	Cursor		c = {blob, len, 8};
	const char *s;
	uint32_t	n;
	TrArtTensor t;
	int			rc;

	memset(hdr, 0, sizeof(*hdr));
	if (blob == NULL || len < 8 || memcmp(blob, TR_ARTIFACT_MAGIC, 8) != 0)
		return Fail(err, errlen, "not an easeml model artifact (no \"%s\" magic)", TR_ARTIFACT_MAGIC);
	if (GetStr(&c, TR_ART_MAX_NAME, &s, &n) != 0 || n == 0 || memchr(s, '\0', n) != NULL)
		return Fail(err, errlen, "the artifact's family name is malformed");
	memcpy(hdr->family, s, n);
	hdr->family[n] = '\0';
	if ((rc = GetHeader(&c, hdr, err, errlen)) != 0)
		return rc;
	/* every class name takes at least its 4 length bytes */
	if ((size_t) hdr->n_classes > (c.len - c.pos) / 4)
		return Fail(err, errlen, "the artifact's %d class names are truncated", hdr->n_classes);
	hdr->classes_pos = c.pos;
	for (int k = 0; k < hdr->n_classes; k++)
		if (GetStr(&c, UINT32_MAX, &s, &n) != 0)
			return Fail(err, errlen, "class name %d is truncated", k + 1);
	hdr->tensors_pos = c.pos;
	while ((rc = GetTensor(&c, &t, err, errlen)) == 1)
		hdr->n_tensors++;
	if (rc != 0)
		return rc;
	if (c.pos != c.len)
		return Fail(err, errlen, "the artifact has %zu bytes after its end marker", c.len - c.pos);
	return TR_ART_OK;
}

void
TrArtifactClassesBegin(const unsigned char *blob, size_t len,
					   const TrArtHeader *hdr, TrArtClasses *it)
{
	it->blob = blob;
	it->len = len;
	it->pos = hdr->classes_pos;
	it->left = hdr->n_classes;
}

int
TrArtifactClassNext(TrArtClasses *it, const char **name, uint32_t *name_len)
{
	Cursor		c = {it->blob, it->len, it->pos};

	*name = NULL;
	*name_len = 0;
	if (it->left <= 0)
		return 0;
	tr_artifact_class_reads++;
	if (GetStr(&c, UINT32_MAX, name, name_len) != 0)
	{
		it->left = 0;
		*name = NULL;
		*name_len = 0;
		return 0;
	}
	it->pos = c.pos;
	it->left--;
	return 1;
}

int
TrArtifactClassCopy(TrArtClasses *it, char **out)
{
	const char *s;
	uint32_t	n;

	*out = NULL;
	if (!TrArtifactClassNext(it, &s, &n))
		return TR_ART_BAD;
	if ((*out = malloc((size_t) n + 1)) == NULL)
		return TR_ART_NO_MEMORY;
	memcpy(*out, s, n);
	(*out)[n] = '\0';
	return TR_ART_OK;
}

int
TrArtifactTensor(const unsigned char *blob, size_t len, const TrArtHeader *hdr,
				 const char *name, TrArtTensor *t)
{
	Cursor		c = {blob, len, hdr->tensors_pos};
	size_t		nlen = strlen(name);

	while (GetTensor(&c, t, NULL, 0) == 1)
		if (t->name_len == nlen && memcmp(t->name, name, nlen) == 0)
			return 1;
	memset(t, 0, sizeof(*t));
	return 0;
}

const void *
TrArtifactFind(const unsigned char *blob, size_t len, const char *name,
			   int *dtype, int *ndim, int64_t *dims)
{
	TrArtHeader hdr;
	TrArtTensor t;

	if (TrArtifactCheck(blob, len, &hdr, NULL, 0) != TR_ART_OK ||
		!TrArtifactTensor(blob, len, &hdr, name, &t))
		return NULL;
	if (dtype)
		*dtype = t.dtype;
	if (ndim)
		*ndim = t.ndim;
	if (dims)
		memcpy(dims, t.dims, sizeof(int64_t) * t.ndim);
	return t.data;
}
