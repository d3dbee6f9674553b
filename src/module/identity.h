/*-------------------------------------------------------------------------
 *
 * identity.h
 *	  The one module that changes the identity easeml's server code runs
 *	  as (src/module/identity.c; docs/security.md, "Identity switching").
 *
 * Every section under another identity
 *	- runs with search_path = pg_catalog, pg_temp (pg_temp last, so that
 *	  a tenant's temporary tables or types never shadow a catalog name),
 *	  set at a new GUC nest level: every setting changed inside the
 *	  section is undone when it ends;
 *	- ends with the caller's identity, and on error the (sub)transaction
 *	  abort restores identity, settings and read-only state.
 *
 * As the bootstrap superuser (EasemlBeginSuperuser, EasemlExecAsSuperuser)
 * only easeml's own statements run: names built by easeml, qualified,
 * values passed as parameters; no tenant code.  The section also pins the
 * settings a tenant's session could otherwise carry into them (where
 * tables are made, how SQL text is parsed and values printed: see
 * superuser_settings in identity.c).
 *
 * As a tenant (EasemlBeginTenant, EasemlExecAsTenant, the trainer's data
 * session) the section is a security-restricted operation (no SET ROLE,
 * RESET ROLE, SET SESSION AUTHORIZATION, temporary objects), read-only, and
 * refused for a role that is a superuser: a tenant's data and code are
 * never read or run with a superuser's privileges.
 *
 * IDENTIFICATION
 *	  src/module/identity.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_IDENTITY_H
#define EASEML_IDENTITY_H

#include "postgres.h"

/* what a section saved, to restore when it ends */
typedef struct EasemlIdentity
{
	Oid			userid;
	int			sec_context;
	int			nestlevel;
	bool		read_only;
} EasemlIdentity;

/* the search_path of every section under another identity */
#define EASEML_SAFE_SEARCH_PATH "pg_catalog, pg_temp"

extern void EasemlBeginSuperuser(EasemlIdentity *saved);
extern void EasemlBeginTenant(EasemlIdentity *saved, Oid role);
extern void EasemlEndIdentity(EasemlIdentity *saved);

/* one SPI statement in a section; call between SPI_connect and SPI_finish */
extern int	EasemlExecAsSuperuser(const char *sql, int nargs, Oid *types,
								  Datum *values, const char *nulls,
								  bool read_only, long count);
extern int	EasemlExecAsTenant(Oid role, const char *sql, int nargs, Oid *types,
							   Datum *values, const char *nulls, long count);

/* the trainer's data session: the tenant until the transaction ends */
extern void EasemlBecomeTenantForTransaction(Oid role);

#endif							/* EASEML_IDENTITY_H */
