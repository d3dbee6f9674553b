/*-------------------------------------------------------------------------
 *
 * replay_config.c
 *	  A replay's configuration (replay.h): policy specs parsed, the
 *	  defaults, and the check of a whole configuration before any work;
 *	  also the error formatter every replay file uses.
 *
 * IDENTIFICATION
 *	  src/core/replay_config.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "replay.h"
#include "replay_internal.h"

/* Format an error message into the caller's buffer. */
void
ReplaySetErr(char *err, size_t errlen, const char *fmt,...)
{
	va_list		ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ----------------------------------------------------------------------
 * Policy specs (src/core/policy_spec.c parses them)
 * ----------------------------------------------------------------------
 */

/* Parse "name[:opt]..." into a ReplayPolicy; see replay.h. */
int
ReplayParsePolicy(const char *spec, ReplayPolicy *policy, char *err,
				  size_t errlen)
{
	if (spec == NULL || policy == NULL)
	{
		ReplaySetErr(err, errlen, "no policy");
		return REPLAY_BAD_INPUT;
	}
	memset(policy, 0, sizeof(*policy));
	if (strlen(spec) >= sizeof(policy->name))
	{
		ReplaySetErr(err, errlen, "policy spec \"%.40s...\" is too long", spec);
		return REPLAY_BAD_INPUT;
	}
	snprintf(policy->name, sizeof(policy->name), "%s", spec);
	if (PolicyParseSpec(spec, &policy->params, err, errlen) != POLICY_OK)
		return REPLAY_BAD_INPUT;
	policy->auto_select = policy->params.auto_select;
	return REPLAY_OK;
}

/* ----------------------------------------------------------------------
 * Defaults and the check of a configuration
 * ----------------------------------------------------------------------
 */

/* Defaults of a replay configuration. */
void
ReplayConfigDefault(ReplayConfig *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->n_tenants = 20;
	cfg->devices = 1;
	cfg->draws = 20;
	cfg->seed = 1;
	cfg->cost_model = POLICY_COST_SIZE_GP;
	cfg->prior.kernel = GP_KERNEL_EMPIRICAL;
	cfg->grid_points = 200;
	cfg->fair_share = 1;
}

/* Validate a configuration before any work. */
int
ReplayCheckConfig(const ReplayConfig *cfg, char *err, size_t errlen)
{
	size_t		i,
				cells;
	int			k;

	if (cfg->quality == NULL || cfg->n_rows <= 0 || cfg->K <= 0)
	{
		ReplaySetErr(err, errlen, "no quality matrix");
		return 0;
	}
	cells = (size_t) cfg->n_rows * cfg->K;
	for (i = 0; i < cells; i++)
		if (!(cfg->quality[i] >= 0.0 && cfg->quality[i] <= 1.0))
		{
			ReplaySetErr(err, errlen, "quality row %zu, column %zu is %g: quality must be in [0,1] without gaps",
				   i / cfg->K + 1, i % cfg->K + 1, cfg->quality[i]);
			return 0;
		}
	if (cfg->cost)
		for (i = 0; i < cells; i++)
			if (!(cfg->cost[i] > 0.0) || !isfinite(cfg->cost[i]))
			{
				ReplaySetErr(err, errlen, "cost row %zu, column %zu is %g: costs must be positive and finite",
					   i / cfg->K + 1, i % cfg->K + 1, cfg->cost[i]);
				return 0;
			}
	if (cfg->n_tenants <= 0 || cfg->n_tenants > cfg->n_rows)
	{
		ReplaySetErr(err, errlen, "tenants must be between 1 and the %d rows", cfg->n_rows);
		return 0;
	}
	if (cfg->first_draw < 0)
	{
		ReplaySetErr(err, errlen, "first draw must be >= 0");
		return 0;
	}
	if (cfg->n_prior < 0)
	{
		ReplaySetErr(err, errlen, "prior rows must be >= 0");
		return 0;
	}
	if (cfg->devices <= 0 || cfg->devices > 4096)
	{
		ReplaySetErr(err, errlen, "devices must be between 1 and 4096");
		return 0;
	}
	if (cfg->draws <= 0 || cfg->draws > 100000)
	{
		ReplaySetErr(err, errlen, "draws must be between 1 and 100000");
		return 0;
	}
	if (cfg->n_policies <= 0 || cfg->policies == NULL)
	{
		ReplaySetErr(err, errlen, "no policies");
		return 0;
	}
	if (cfg->n_thresholds < 0 || (cfg->n_thresholds > 0 && cfg->thresholds == NULL))
	{
		ReplaySetErr(err, errlen, "bad thresholds");
		return 0;
	}
	for (k = 0; k < cfg->n_thresholds; k++)
		if (!(cfg->thresholds[k] >= 0.0 && cfg->thresholds[k] <= 1.0))
		{
			ReplaySetErr(err, errlen, "thresholds must be in [0,1]");
			return 0;
		}
	if ((int) cfg->cost_model < 0 || cfg->cost_model > POLICY_COST_SIZE_GP)
	{
		ReplaySetErr(err, errlen, "unknown cost model");
		return 0;
	}
	if (cfg->cost && !cfg->oracle_cost && cfg->cost_model != POLICY_COST_NONE)
	{
		if (cfg->sizes == NULL)
		{
			ReplaySetErr(err, errlen, "cost model %s needs data-set sizes (or use oracle costs or cost model none)",
				   PolicyCostKindName(cfg->cost_model));
			return 0;
		}
		for (i = 0; i < 2 * (size_t) cfg->n_rows; i++)
			if (!(cfg->sizes[i] > 0.0) || !isfinite(cfg->sizes[i]))
			{
				ReplaySetErr(err, errlen, "data-set size of row %zu must be positive", i / 2 + 1);
				return 0;
			}
	}
	if (cfg->stop_loss < 0.0 || cfg->grid_points < 0 || cfg->max_devices_per_tenant < 0)
	{
		ReplaySetErr(err, errlen, "bad stop loss, grid size or device limit");
		return 0;
	}
	return 1;
}
