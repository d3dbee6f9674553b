/*-------------------------------------------------------------------------
 *
 * tr_artifact_write.c
 *	  The writer of "EASEMLA1" artifacts (docs/models.md §4): families
 *	  call TrArtifactBegin, TrArtifactAdd per tensor, and TrArtifactFinish.
 *
 * The header carries the family, the task kind, the shapes, the class
 * names and the preprocessing (the raw columns' encoders), so predict
 * needs nothing but the blob.  The reader is tr_artifact.c.
 *
 * IDENTIFICATION
 *	  src/trainer/predict/tr_artifact_write.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"

static void
ArtPut(TrArtifact *art, const void *p, size_t n)
{
	if (art->failed)
		return;
	if (art->len + n > art->cap)
	{
		size_t		cap = art->cap ? art->cap : 4096;
		unsigned char *nb;

		while (cap < art->len + n)
			cap *= 2;
		nb = realloc(art->buf, cap);
		if (nb == NULL)
		{
			art->failed = 1;
			return;
		}
		art->buf = nb;
		art->cap = cap;
	}
	memcpy(art->buf + art->len, p, n);
	art->len += n;
}

/* x86-64 and aarch64 are little-endian, which is the artifact's byte order */
static void
ArtU32(TrArtifact *art, uint32_t v)
{
	ArtPut(art, &v, 4);
}

static void
ArtStr(TrArtifact *art, const char *s)
{
	uint32_t	n = (uint32_t) strlen(s);

	ArtU32(art, n);
	ArtPut(art, s, n);
}

/*
 * Start an artifact: magic, family, task kind, shapes, class names and the
 * preprocessing (mean, scale) needed to apply the model to raw rows.
 */
void
TrArtifactBegin(TrArtifact *art, const char *family, const TrData *data)
{
	int64_t		dims[1];

	memset(art, 0, sizeof(*art));
	ArtPut(art, TR_ARTIFACT_MAGIC, 8);
	ArtStr(art, family);
	ArtU32(art, (uint32_t) data->kind);
	ArtU32(art, (uint32_t) data->d);
	ArtU32(art, (uint32_t) data->n_classes);
	ArtU32(art, (uint32_t) data->channels);
	ArtU32(art, (uint32_t) data->height);
	ArtU32(art, (uint32_t) data->width);
	for (int c = 0; c < data->n_classes; c++)
		ArtStr(art, data->class_names[c]);
	dims[0] = data->d;
	if (data->mean != NULL)
		TrArtifactAdd(art, "prep.mean", TR_DT_F64, 1, dims, data->mean);
	if (data->scale != NULL)
		TrArtifactAdd(art, "prep.scale", TR_DT_F64, 1, dims, data->scale);
	/* the raw columns' encoders (src/core/encode.h), which prep.mean/scale follow */
	if (data->encoders != NULL)
	{
		unsigned char *blob;
		size_t		len;

		if (EncListWrite(data->encoders, data->n_encoders, &blob, &len) != 0)
			art->failed = 1;
		else
		{
			dims[0] = (int64_t) len;
			TrArtifactAdd(art, "prep.encoders", TR_DT_U8, 1, dims, blob);
			free(blob);
		}
	}
}

/* append one named tensor (dims are int64, row-major data) */
void
TrArtifactAdd(TrArtifact *art, const char *name, int dtype, int ndim,
			  const int64_t *dims, const void *values)
{
	size_t		count = 1;

	ArtStr(art, name);
	ArtU32(art, (uint32_t) dtype);
	ArtU32(art, (uint32_t) ndim);
	for (int i = 0; i < ndim; i++)
	{
		ArtPut(art, &dims[i], 8);
		count *= (size_t) dims[i];
	}
	ArtPut(art, values, count * TrDtypeSize(dtype));
}

/* terminate the tensor list and hand the buffer to res; 0 or error */
int
TrArtifactFinish(TrArtifact *art, TrResult *res)
{
	ArtU32(art, 0);				/* empty name ends the list */
	if (art->failed)
	{
		free(art->buf);
		memset(art, 0, sizeof(*art));
		TrSetError(res, "out of memory while writing the model artifact");
		return -1;
	}
	free(res->artifact);
	res->artifact = art->buf;
	res->artifact_len = art->len;
	memset(art, 0, sizeof(*art));
	return 0;
}
