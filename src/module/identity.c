/*-------------------------------------------------------------------------
 *
 * identity.c
 *	  Running as another identity: the bootstrap superuser for easeml's own
 *	  statements, a tenant for reading the tenant's data.  The contract is
 *	  in identity.h and docs/security.md; this is the only file of the
 *	  server code that calls SetUserIdAndSecContext.
 *
 * Why the search_path: a function that runs with another identity in a
 * tenant's session would otherwise resolve names with the session's
 * search_path, and PostgreSQL searches the session's temporary schema
 * first for relations and types unless pg_temp is named in the path: a
 * tenant's temporary "pg_roles" or "pg_class" would then answer a
 * superuser's catalog query.  With pg_catalog first and pg_temp last, a
 * catalog name is always the catalog's, and pg_temp is never searched for
 * functions or operators.
 *
 * IDENTIFICATION
 *	  src/module/identity.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "executor/spi.h"
#include "identity.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/syscache.h"

/*
 * What a superuser section pins besides search_path: a statement of
 * easeml's means the same, and makes the same objects, in every session
 * (docs/security.md, "Identity switching").  Each of these is a setting
 * any role may change in its own session, and would otherwise carry into
 * the superuser's statements: where and how the snapshot tables are made
 * (a tenant's default_tablespace put its snapshot into a tablespace it may
 * not use), how easeml's own SQL text is parsed (string literals, "=
 * NULL", array literals), and how values are turned into text and back
 * (the catalog loader reads numbers as text; names are quoted).  The
 * tenant's sections keep the tenant's own settings: they are the tenant's
 * reads.  Settings only a superuser may change (session_replication_role)
 * are not the tenant's to set.
 */
static const struct
{
	const char *name;
	const char *value;
}			superuser_settings[] =
{
	{"default_tablespace", ""},
	{"temp_tablespaces", ""},
	{"default_table_access_method", "heap"},
	{"default_toast_compression", "pglz"},
	{"standard_conforming_strings", "on"},
	{"transform_null_equals", "off"},
	{"array_nulls", "on"},
	{"backslash_quote", "safe_encoding"},
	{"check_function_bodies", "on"},
	{"quote_all_identifiers", "off"},
	{"DateStyle", "ISO, MDY"},
	{"IntervalStyle", "postgres"},
	{"extra_float_digits", "1"},
	{"bytea_output", "hex"},
};

/*
 * Set the section's search_path (and in a superuser section the settings
 * above) at a new GUC nest level, so that the section's end undoes them.
 */
static int
PinSettings(bool superuser_section)
{
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", EASEML_SAFE_SEARCH_PATH,
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (superuser_section)
		for (int i = 0; i < lengthof(superuser_settings); i++)
			(void) set_config_option(superuser_settings[i].name,
									 superuser_settings[i].value,
									 PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_SAVE, true, 0, false);
	return nestlevel;
}

/* refuse to act as a role that does not exist or is a superuser */
static void
CheckTenantRole(Oid role)
{
	if (!OidIsValid(role) || !SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role with OID %u does not exist", role)));
	if (superuser_arg(role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("easeml does not read a tenant's data as superuser \"%s\"",
						GetUserNameFromId(role, false)),
				 errhint("A tenant must not be a superuser: ALTER ROLE %s NOSUPERUSER.",
						 quote_identifier(GetUserNameFromId(role, false)))));
}

/*
 * Become the bootstrap superuser until EasemlEndIdentity: for easeml's own
 * statements only.  SET ROLE and SET SESSION AUTHORIZATION are refused in
 * the section (a local user id change).
 */
void
EasemlBeginSuperuser(EasemlIdentity *saved)
{
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	saved->read_only = XactReadOnly;
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   saved->sec_context | SECURITY_LOCAL_USERID_CHANGE);
	saved->nestlevel = PinSettings(true);
}

/*
 * Become role, a tenant, until EasemlEndIdentity: a read-only,
 * security-restricted operation.  role may be the current user (the
 * declaration reads the source as the declaring tenant).
 */
void
EasemlBeginTenant(EasemlIdentity *saved, Oid role)
{
	CheckTenantRole(role);
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	saved->read_only = XactReadOnly;
	/* restricted: SET ROLE and the like are refused, as they are there */
	SetUserIdAndSecContext(role,
						   saved->sec_context | SECURITY_RESTRICTED_OPERATION);
	saved->nestlevel = PinSettings(false);
	XactReadOnly = true;
}

/*
 * End a section: settings changed in it are undone (also those the
 * tenant's code changed), then the caller's read-only state and identity
 * come back.
 */
void
EasemlEndIdentity(EasemlIdentity *saved)
{
	AtEOXact_GUC(false, saved->nestlevel);
	XactReadOnly = saved->read_only;
	SetUserIdAndSecContext(saved->userid, saved->sec_context);
}

/*
 * One statement as the bootstrap superuser, for C functions that act on
 * the caller's own rows: tenants have no UPDATE or DELETE privilege on the
 * tables the scheduler writes (which would also let them lock its rows),
 * so such functions check ownership in the statement itself.  They cannot
 * be SECURITY DEFINER: they need to know who called them.
 */
int
EasemlExecAsSuperuser(const char *sql, int nargs, Oid *types, Datum *values,
					  const char *nulls, bool read_only, long count)
{
	EasemlIdentity saved;
	int			rc;

	EasemlBeginSuperuser(&saved);
	/* on error, (sub)transaction abort restores identity and settings */
	rc = SPI_execute_with_args(sql, nargs, types, values, nulls, read_only, count);
	EasemlEndIdentity(&saved);
	return rc;
}

/* One read-only statement as a tenant, restricted. */
int
EasemlExecAsTenant(Oid role, const char *sql, int nargs, Oid *types,
				   Datum *values, const char *nulls, long count)
{
	EasemlIdentity saved;
	int			rc;

	EasemlBeginTenant(&saved, role);
	rc = SPI_execute_with_args(sql, nargs, types, values, nulls, true, count);
	EasemlEndIdentity(&saved);
	return rc;
}

/*
 * The trainer's data session: the tenant for the rest of the current
 * transaction, read-only and restricted.  The identity comes back when the
 * transaction ends, by commit or abort (abort alone would restore it;
 * commit does not, hence the callback).  The search_path pinned here does
 * not last: the caller, easeml_trainer.data_session, is declared with SET
 * search_path, and its return undoes every settings level from its own
 * up, this one included; the rest of the transaction runs under the
 * session's search_path, which the trainer's connection sets to
 * pg_catalog, pg_temp (src/worker/launch.c).  The caller checks it is at
 * the top level of a transaction block.
 */
static bool tenant_xact_active = false;
static bool tenant_xact_callback = false;
static Oid	tenant_xact_userid = InvalidOid;
static int	tenant_xact_sec_context = 0;

static void
TenantXactCallback(XactEvent event, void *arg)
{
	if (!tenant_xact_active)
		return;
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			SetUserIdAndSecContext(tenant_xact_userid, tenant_xact_sec_context);
			tenant_xact_active = false;
			break;
		default:
			break;
	}
}

void
EasemlBecomeTenantForTransaction(Oid role)
{
	if (tenant_xact_active)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("this transaction already acts as a tenant")));
	CheckTenantRole(role);
	if (!tenant_xact_callback)
	{
		RegisterXactCallback(TenantXactCallback, NULL);
		tenant_xact_callback = true;
	}
	GetUserIdAndSecContext(&tenant_xact_userid, &tenant_xact_sec_context);
	tenant_xact_active = true;
	SetUserIdAndSecContext(role,
						   tenant_xact_sec_context | SECURITY_RESTRICTED_OPERATION);
	/*
	 * for the rest of the calling function only: a function declared with
	 * SET pops this level when it returns (see above); otherwise the
	 * transaction's end does
	 */
	(void) PinSettings(false);
	XactReadOnly = true;
}
