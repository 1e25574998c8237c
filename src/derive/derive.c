/* derive: the order of the passes, from what they read and write, and their run. */
#define LOG_DOMAIN "derive"
#include "derive.h"
#include "../util/order.h"
#include "../record/recorder.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <string.h>

/* The length of name's table part ("samples" of "samples:cpu"). */
static size_t table_len(const char *name)
{
	const char *colon = strchr(name, ':');
	return colon ? (size_t)(colon - name) : strlen(name);
}

int derive_meets(const char *need, const char *made)
{
	size_t n = table_len(need), m = table_len(made);
	if (n != m || strncmp(need, made, n))
		return 0;
	/* A whole table meets any part of it; two parts meet when they are one. */
	return !need[n] || !made[m] || !strcmp(need + n, made + m);
}

int derive_order(const struct derive_pass *const *table, const struct derive_pass **out,
		 struct strbuf *why)
{
	struct order_item items[DERIVE_PASSES_MAX] = { { 0 } };
	size_t idx[DERIVE_PASSES_MAX], n = 0;
	for (; table[n]; n++) {
		if (n == DERIVE_PASSES_MAX) {
			strbuf_addf(why, "more than %d derive passes", DERIVE_PASSES_MAX);
			return -1;
		}
		items[n] = (struct order_item){ table[n]->name, table[n]->reads, table[n]->writes };
	}
	if (order_by_needs(items, n, derive_meets, idx, "derive passes", why) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		out[i] = table[idx[i]];
	return (int)n;
}

int derive_run(struct recorder *rec, const struct derive_pass *const *table)
{
	const struct derive_pass *order[DERIVE_PASSES_MAX];
	struct strbuf why = STRBUF_INIT;
	struct derive_ctx ctx = { .rec = rec, .db = recorder_db(rec) };
	int rc = 0;
	int n = derive_order(table, order, &why);
	if (n < 0) {
		log_warn("%s", why.buf);
		record_note(rec, 0, "derive", "warning", why.buf);
		rc = -1;
		goto out;
	}
	if (!ctx.db) /* the recording failed: nothing to read */
		goto out;
	for (int i = 0; i < n; i++) {
		strbuf_reset(&why);
		int64_t rows = order[i]->run(&ctx, &why);
		if (rows < 0) {
			struct strbuf msg = STRBUF_INIT;
			strbuf_addf(&msg, "derive pass %s failed: %s", order[i]->name,
				    why.len ? why.buf : "a recording error");
			log_warn("%s", msg.buf);
			record_note(rec, 0, "derive", "warning", msg.buf);
			strbuf_release(&msg);
			rc = -1;
		} else {
			log_debug("%s: %lld rows", order[i]->name, (long long)rows);
		}
	}
out:
	strbuf_release(&why);
	return rc;
}
