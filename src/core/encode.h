/*-------------------------------------------------------------------------
 *
 * encode.h
 *	  Column encoders beyond plain standardisation: categories (one-hot or
 *	  hashed), dates and timestamps (numeric parts), and numbers with a
 *	  missing-value indicator (docs/data.md).
 *
 * An encoder turns one raw value of a column into n_out features: first
 * the raw outputs (a one-hot slot, the parts of a date, the number, then
 * the missing-value indicator if the column has one), then each output is
 * standardised with its own mean and scale fitted on the training rows.
 * The trainer fits encoders (tr_prep.c); the parameters travel in the
 * artifact's preprocessing section as opaque bytes (EncWrite/EncRead), and
 * EncApply() is the one function training and easeml.predict() both run.
 *
 *	 Numeric	  1 output: the value; a missing one is replaced by the
 *				  fitted fill (the training mean, median or most frequent
 *				  value).
 *	 One-hot	  one output per category seen in training (a column with at
 *				  most ENC_ONEHOT_MAX of them); an unknown category sets
 *				  none, a missing one is the most frequent category.
 *	 Hashed		  ENC_HASH_BUCKETS outputs, the FNV-1a hash of the value
 *				  modulo the buckets (a column with more categories: the
 *				  width stays bounded, unknown values need no special case,
 *				  and the label never leaks into the features, as it could
 *				  with target encoding).
 *	 Date		  year, month, day, ISO weekday (0 = Monday), day of year and
 *				  days since 1970-01-01, from seconds since the epoch (UTC).
 *	 Timestamp	  the date parts and the hour of the day (fractional).
 *
 * Every encoder may add a last output, the missing-value indicator: 1 when
 * the raw value was missing (NULL, NaN), else 0.
 *
 * Plain C: no PostgreSQL headers, no exit(), no output.  EncRead() checks
 * every size against the bytes it is given.
 *
 * IDENTIFICATION
 *	  src/core/encode.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_ENCODE_H
#define EASEML_ENCODE_H

#include <stddef.h>
#include <stdint.h>

typedef enum EncKind
{
	ENC_NUMERIC = 1,
	ENC_ONEHOT = 2,
	ENC_HASHED = 3,
	ENC_DATE = 4,
	ENC_TIMESTAMP = 5
} EncKind;

#define ENC_ONEHOT_MAX		32	/* more categories than this are hashed */
#define ENC_HASH_BUCKETS	32
#define ENC_MAX_SLOTS		(1 << 20)
#define ENC_MAX_VALUE_LEN	(1 << 20)

/* status of EncRead: the same numbers as src/trainer/predict/tr_artifact.h's TR_ART_* */
#define ENC_BAD				(-1)
#define ENC_NO_MEMORY		(-2)

typedef struct Encoder
{
	EncKind		kind;
	int			n_out;			/* features written */
	int			indicator;		/* 1: the last feature flags a missing value */
	double		fill;			/* numeric, date, timestamp: raw fill value */
	int			fill_slot;		/* one-hot, hashed: slot of a missing value */
	int			n_slots;		/* one-hot: categories; hashed: buckets */
	char	  **values;			/* one-hot: the categories, sorted (memcmp) */
	uint32_t   *lens;			/* their byte lengths */
	double	   *mean;			/* n_out: standardisation of each output */
	double	   *scale;
} Encoder;

/* number of raw parts a kind writes (before the indicator) */
extern int	EncParts(EncKind kind, int n_slots);

/* slot of a category: the one-hot position (-1: unknown) or hash bucket */
extern int	EncSlot(const Encoder *e, const char *s, size_t len);

/*
 * The raw (unstandardised) outputs of one value into raw[n_out]: num for
 * numeric, date and timestamp columns (NaN = missing), s/len for
 * categories (s NULL = missing).  Returns 1 when a category was unknown,
 * else 0.
 */
extern int	EncRaw(const Encoder *e, double num, const char *s, size_t len,
				   double *raw);

/* EncRaw, then standardised, as floats */
extern int	EncApply(const Encoder *e, double num, const char *s, size_t len,
					 float *out);

/* parameter bytes: malloc'd into *buf; 0, or ENC_NO_MEMORY */
extern int	EncWrite(const Encoder *e, unsigned char **buf, size_t *len);
extern int	EncRead(EncKind kind, int n_out, const unsigned char *p, size_t len,
					Encoder *e, char *err, size_t errlen);
extern void EncFree(Encoder *e);

/*
 * A list of encoders, one per raw column, as one blob (until the artifact
 * has a preprocessing section of its own): u32 count, then per encoder
 * u32 kind, u32 n_out, u32 parameter bytes and EncWrite's bytes.
 */
extern int	EncListWrite(const Encoder *e, int n, unsigned char **buf, size_t *len);
extern int	EncListRead(const unsigned char *p, size_t len, Encoder **out, int *n,
						char *err, size_t errlen);

/* date parts of seconds since 1970-01-01 UTC into out[6] (or 7 with hour) */
extern void EncDateParts(double seconds, int with_hour, double *out);

#endif							/* EASEML_ENCODE_H */
