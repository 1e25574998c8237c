/* probes: the table of every probe sonde knows. */
#include "probe.h"
#include "../util/order.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define PROBE(name) extern const struct probe_ops probe_##name;
#include "probe_list.h"
#undef PROBE

const struct probe_ops *const probe_table[] = {
#define PROBE(name) &probe_##name,
#include "probe_list.h"
#undef PROBE
	NULL,
};

int probe_env_set(struct probe_ctx *ctx, const char *name, const char *value)
{
	struct probe_env *env = ctx->env;
	if (!env)
		return -1;
	size_t nlen = strlen(name);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s=%s", name, value);
	for (size_t i = 0; i < env->n; i++)
		if (!strncmp(env->v[i], name, nlen) && env->v[i][nlen] == '=') {
			free(env->v[i]);
			env->v[i] = strbuf_detach(&sb);
			return 0;
		}
	if (env->n + 2 > env->alloc) {
		env->alloc = env->alloc ? env->alloc * 2 : 8;
		env->v = xrealloc(env->v, env->alloc * sizeof(*env->v));
	}
	env->v[env->n++] = strbuf_detach(&sb);
	env->v[env->n] = NULL;
	return 0;
}

const char *probe_env_get(const struct probe_ctx *ctx, const char *name)
{
	size_t nlen = strlen(name);
	for (size_t i = 0; ctx->env && i < ctx->env->n; i++)
		if (!strncmp(ctx->env->v[i], name, nlen) && ctx->env->v[i][nlen] == '=')
			return ctx->env->v[i] + nlen + 1;
	return getenv(name);
}

void probe_env_release(struct probe_env *env)
{
	for (size_t i = 0; i < env->n; i++)
		free(env->v[i]);
	free(env->v);
	*env = (struct probe_env)PROBE_ENV_INIT;
}

const char *probe_option_value(const struct probe_config *cfg, const char *name)
{
	for (size_t i = cfg->ngiven; i-- > 0;)
		if (!strcmp(cfg->given[i].opt->name, name))
			return cfg->given[i].arg ? cfg->given[i].arg : "";
	return NULL;
}

const struct probe_ops *probe_find(const char *name)
{
	for (size_t i = 0; probe_table[i]; i++)
		if (!strcmp(probe_table[i]->name, name))
			return probe_table[i];
	return NULL;
}

int probe_order(const struct probe_ops *const *table, const struct probe_ops **out,
		struct strbuf *why)
{
	struct order_item items[PROBES_MAX] = { { 0 } };
	size_t idx[PROBES_MAX], n = 0;
	for (; table[n]; n++) {
		if (n == PROBES_MAX) {
			strbuf_addf(why, "more than %d probes", PROBES_MAX);
			return -1;
		}
		items[n] = (struct order_item){ table[n]->name, table[n]->needs, table[n]->provides };
	}
	if (order_by_needs(items, n, NULL, idx, "probes", why) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		out[i] = table[idx[i]];
	return (int)n;
}

void probe_env_path_prepend(struct probe_ctx *ctx, const char *name, const char *dir)
{
	const char *old = probe_env_get(ctx, name);
	size_t n = strlen(dir);
	if (old && !strncmp(old, dir, n) && (old[n] == ':' || !old[n]))
		return;
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, dir);
	if (old && *old)
		strbuf_addf(&sb, ":%s", old);
	probe_env_set(ctx, name, sb.buf);
	strbuf_release(&sb);
}
