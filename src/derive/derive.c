/* derive: the order of the passes, from what they read and write, and their run. */
#define LOG_DOMAIN "derive"
#include "derive.h"
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

/* 1 when pass b reads something pass a writes (a must run first). */
static int pass_feeds(const struct derive_pass *a, const struct derive_pass *b)
{
	if (a == b || !a->writes || !b->reads)
		return 0;
	for (const char *const *w = a->writes; *w; w++)
		for (const char *const *r = b->reads; *r; r++)
			if (derive_meets(*r, *w))
				return 1;
	return 0;
}

int derive_order(const struct derive_pass *const *table, const struct derive_pass **out,
		 struct strbuf *why)
{
	size_t n = 0, done = 0;
	unsigned char placed[DERIVE_PASSES_MAX] = { 0 };
	while (table[n])
		if (++n > DERIVE_PASSES_MAX) {
			strbuf_addf(why, "more than %d derive passes", DERIVE_PASSES_MAX);
			return -1;
		}
	/* Each round places the first pass, in table order, that waits on no
	 * pass still unplaced: stable, and n^2 checks for a handful of passes. */
	while (done < n) {
		size_t pick = n;
		for (size_t i = 0; i < n && pick == n; i++) {
			if (placed[i])
				continue;
			size_t j = 0;
			while (j < n && (placed[j] || !pass_feeds(table[j], table[i])))
				j++;
			if (j == n)
				pick = i;
		}
		if (pick == n) {
			strbuf_addstr(why, "derive passes wait on each other:");
			for (size_t i = 0; i < n; i++)
				if (!placed[i])
					strbuf_addf(why, " %s", table[i]->name);
			return -1;
		}
		placed[pick] = 1;
		out[done++] = table[pick];
	}
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
