/*-------------------------------------------------------------------------
 *
 * tr_check.h
 *	  Can the trainer train a model row of easeml.models? (tr_check.c)
 *
 * IDENTIFICATION
 *	  src/trainer/tr_check.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_CHECK_H
#define EASEML_TR_CHECK_H

#include <stddef.h>

#include <json-c/json.h>

extern int	TrModelCheck(const char *family, json_object *params,
						 const char *kinds, int needs_image,
						 char *err, size_t errlen);
extern int	TrCheckModelMain(int argc, char **argv);

#endif							/* EASEML_TR_CHECK_H */
