/*-------------------------------------------------------------------------
 *
 * tr_column.c
 *	  Typed columns of a loaded table: the kind of each feature column and
 *	  the values of its categorical columns (docs/data.md).
 *
 * A categorical column is stored in TrTable.X like a numeric one, as the
 * code of each cell's value (the values numbered in order of arrival), so
 * splitting, shuffling and copying rows never touch strings.  The codes are
 * only an index into TrCategories: the encoding the model sees (one-hot or
 * hashed) is fitted later on the training rows by the values themselves,
 * so it does not depend on row order.
 *
 * IDENTIFICATION
 *	  src/trainer/io/tr_column.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"

/* FNV-1a: enough to spread category strings over a small table */
static uint32_t
HashBytes(const char *s, size_t len)
{
	uint32_t	h = 2166136261u;

	for (size_t i = 0; i < len; i++)
	{
		h ^= (unsigned char) s[i];
		h *= 16777619u;
	}
	return h;
}

/*
 * Give the table column kinds (d entries, copied) and empty category sets.
 * 0, or -1 when out of memory.
 */
int
TrTableSetKinds(TrTable *tab, const int *kinds)
{
	tab->col_kind = malloc(sizeof(int) * (tab->d > 0 ? tab->d : 1));
	tab->cats = calloc(tab->d > 0 ? tab->d : 1, sizeof(TrCategories));
	if (tab->col_kind == NULL || tab->cats == NULL)
		return -1;
	memcpy(tab->col_kind, kinds, sizeof(int) * tab->d);
	return 0;
}

static int
Rehash(TrCategories *c, int nslots)
{
	int		   *slots = calloc(nslots, sizeof(int));

	if (slots == NULL)
		return -1;
	for (int code = 0; code < c->n; code++)
	{
		uint32_t	h = HashBytes(c->values[code], strlen(c->values[code]));
		int			i = (int) (h & (uint32_t) (nslots - 1));

		while (slots[i] != 0)
			i = (i + 1) & (nslots - 1);
		slots[i] = code + 1;
	}
	free(c->slots);
	c->slots = slots;
	c->nslots = nslots;
	return 0;
}

/*
 * The code of value s (len bytes, not NUL-terminated) in c, adding it when
 * new.  -1 when out of memory.  A value holding a NUL byte cannot come from
 * PostgreSQL text; it is cut at the NUL like every C string.
 */
int
TrCategoryCode(TrCategories *c, const char *s, size_t len)
{
	uint32_t	h;
	int			i;

	if (c->nslots == 0 && Rehash(c, 64) != 0)
		return -1;
	h = HashBytes(s, len);
	for (i = (int) (h & (uint32_t) (c->nslots - 1)); c->slots[i] != 0;
		 i = (i + 1) & (c->nslots - 1))
	{
		const char *v = c->values[c->slots[i] - 1];

		if (strncmp(v, s, len) == 0 && v[len] == '\0')
			return c->slots[i] - 1;
	}
	if (c->n == c->cap)
	{
		int			cap = c->cap ? c->cap * 2 : 16;
		char	  **values = realloc(c->values, sizeof(char *) * cap);

		if (values == NULL)
			return -1;
		c->values = values;
		c->cap = cap;
	}
	c->values[c->n] = malloc(len + 1);
	if (c->values[c->n] == NULL)
		return -1;
	memcpy(c->values[c->n], s, len);
	c->values[c->n][len] = '\0';
	c->slots[i] = ++c->n;
	if (2 * c->n >= c->nslots && Rehash(c, c->nslots * 2) != 0)
		return -1;
	return c->n - 1;
}

/* the value of a categorical cell (NULL for a missing one) */
const char *
TrCategoryValue(const TrTable *tab, int j, double code)
{
	const TrCategories *c = &tab->cats[j];

	if (isnan(code) || code < 0 || code >= c->n)
		return NULL;
	return c->values[(int) code];
}

void
TrCategoriesFree(TrCategories *c)
{
	for (int i = 0; i < c->n; i++)
		free(c->values[i]);
	free(c->values);
	free(c->slots);
	memset(c, 0, sizeof(*c));
}
