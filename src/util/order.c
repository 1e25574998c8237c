/* order: a stable order from needs and provides (order.h). */
#include "order.h"
#include "strbuf.h"

#include <stdlib.h>
#include <string.h>

static int meets_equal(const char *need, const char *provided)
{
	return !strcmp(need, provided);
}

/* 1 when a must come before b: b needs something a provides. */
static int item_feeds(const struct order_item *a, const struct order_item *b, order_meets_fn meets)
{
	if (a == b || !a->provides || !b->needs)
		return 0;
	for (const char *const *p = a->provides; *p; p++)
		for (const char *const *q = b->needs; *q; q++)
			if (meets(*q, *p))
				return 1;
	return 0;
}

long order_by_needs(const struct order_item *items, size_t n, order_meets_fn meets, size_t *out,
		    const char *what, struct strbuf *why)
{
	unsigned char *placed = xcalloc(n ? n : 1, 1);
	size_t done = 0;
	long rc = (long)n;
	if (!meets)
		meets = meets_equal;
	/* n^2 checks per step, n steps: tables hold a few dozen at most. */
	while (done < n) {
		size_t pick = n;
		for (size_t i = 0; i < n && pick == n; i++) {
			if (placed[i])
				continue;
			size_t j = 0;
			while (j < n && (placed[j] || !item_feeds(&items[j], &items[i], meets)))
				j++;
			if (j == n)
				pick = i;
		}
		if (pick == n) {
			strbuf_addf(why, "%s wait on each other:", what);
			for (size_t i = 0; i < n; i++)
				if (!placed[i])
					strbuf_addf(why, " %s", items[i].name);
			rc = -1;
			goto out;
		}
		placed[pick] = 1;
		out[done++] = pick;
	}
out:
	free(placed);
	return rc;
}
