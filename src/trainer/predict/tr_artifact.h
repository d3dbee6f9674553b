/*-------------------------------------------------------------------------
 *
 * tr_artifact.h
 *	  The model artifact format "EASEMLA1" (docs/models.md §4): its
 *	  constants and the checked reader that the trainer and the server
 *	  (easeml.predict) share.
 *
 * The reader trusts nothing in the blob: every length, count and shape is
 * checked against the bytes that are actually there, with overflow-safe
 * arithmetic, before anything is read or allocated.  A custom trainer's
 * artifact, a truncated bytea or random bytes give an error status and a
 * message, never a crash (the fuzz test in src/trainer/test/ checks this).
 *
 * Plain C: no PostgreSQL headers, no json-c, no output.  The writer
 * (TrArtifactBegin/Add/Finish, tr_artifact_write.c) needs the trainer's
 * TrData and lives on the trainer's side only.
 *
 * IDENTIFICATION
 *	  src/trainer/predict/tr_artifact.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_ARTIFACT_H
#define EASEML_TR_ARTIFACT_H

#include <stddef.h>
#include <stdint.h>

#define TR_ARTIFACT_MAGIC "EASEMLA1"

/* tensor element types */
#define TR_DT_F32	1
#define TR_DT_F64	2
#define TR_DT_I32	3
#define TR_DT_U8	4

/* status codes (encode.h's ENC_BAD and ENC_NO_MEMORY are the same numbers) */
#define TR_ART_OK			0
#define TR_ART_BAD			(-1)	/* malformed or inconsistent */
#define TR_ART_NO_MEMORY	(-2)
#define TR_ART_UNSUPPORTED	(-3)	/* well formed, but nothing can predict
									 * with it (a custom trainer's blob) */
#define TR_ART_CANCELED		(-4)	/* tr_load_interrupted said stop */

/* limits a well-formed artifact stays within */
#define TR_ART_MAX_NAME		256 /* tensor and family names, bytes */
#define TR_ART_MAX_NDIM		8
#define TR_ART_MAX_CLASSES	(1 << 20)
#define TR_ART_MAX_FEATURES (1 << 26)

/* One tensor, pointing into the blob (the values may be unaligned). */
typedef struct TrArtTensor
{
	const char *name;			/* not NUL-terminated: name_len bytes */
	uint32_t	name_len;
	int			dtype;			/* TR_DT_* */
	int			ndim;
	int64_t		dims[TR_ART_MAX_NDIM];
	size_t		count;			/* product of dims, checked */
	size_t		bytes;			/* count x element size, checked */
	const unsigned char *data;
} TrArtTensor;

/* The header of an artifact, pointing into the blob. */
typedef struct TrArtHeader
{
	char		family[TR_ART_MAX_NAME + 1];
	int			kind;			/* 0 classification, 1 regression */
	int			d;				/* encoded features */
	int			n_classes;
	int			channels;
	int			height;
	int			width;
	size_t		classes_pos;	/* offset of the class names */
	size_t		tensors_pos;	/* offset of the first tensor */
	int			n_tensors;
} TrArtHeader;

extern size_t TrDtypeSize(int dtype);

/*
 * Check a whole artifact: the magic, the header, every class name and
 * every tensor, and that the list ends exactly at the end of the blob.
 * TR_ART_OK, or TR_ART_BAD with err saying what is wrong where.
 */
extern int	TrArtifactCheck(const unsigned char *blob, size_t len,
							TrArtHeader *hdr, char *err, size_t errlen);

/*
 * Class-name entries read since the process started, by every reader of
 * class names: the unit tests check that loading C classes reads C entries,
 * not C^2/2.  Not thread-safe; a count, not a state.
 */
extern unsigned long tr_artifact_class_reads;

/*
 * The class names of a checked artifact, in order, in one pass (each
 * entry's position depends on the lengths before it, so indexing name c
 * directly would mean reading the c names before it every time).
 */
typedef struct TrArtClasses
{
	const unsigned char *blob;
	size_t		len;
	size_t		pos;
	int			left;
} TrArtClasses;

extern void TrArtifactClassesBegin(const unsigned char *blob, size_t len,
								   const TrArtHeader *hdr, TrArtClasses *it);

/*
 * The next class name, pointing into the blob (not NUL-terminated): 1, or
 * 0 after the last one or on a malformed entry.
 */
extern int	TrArtifactClassNext(TrArtClasses *it, const char **name,
								uint32_t *name_len);

/* the next class name copied NUL-terminated (malloc'd) into *out */
extern int	TrArtifactClassCopy(TrArtClasses *it, char **out);

/* the tensor called name of a checked artifact: 1 found, 0 not */
extern int	TrArtifactTensor(const unsigned char *blob, size_t len,
							 const TrArtHeader *hdr, const char *name,
							 TrArtTensor *t);

/*
 * Find a tensor by name in an unchecked artifact: the values (possibly
 * unaligned: copy with memcpy), or NULL when the blob is malformed or has
 * no such tensor.
 */
extern const void *TrArtifactFind(const unsigned char *blob, size_t len,
								  const char *name, int *dtype, int *ndim,
								  int64_t *dims);

#endif							/* EASEML_TR_ARTIFACT_H */
