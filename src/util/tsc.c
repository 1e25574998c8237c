/* tsc: whether the time-stamp counter is a clock here, and the map from its
 * ticks to CLOCK_MONOTONIC nanoseconds (see tsc.h). */
#include "tsc.h"
#include "clock.h"
#include "fileio.h"
#include "strbuf.h"

#include <stdlib.h>
#include <string.h>

/* Tries per pair; the tightest is kept (an interrupt between the reads spoils one). */
#define TSC_PAIR_TRIES 5

static int has_flag(const char *flags, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = flags; (p = strstr(p, name)); p += n)
		if ((p == flags || p[-1] == ' ' || p[-1] == '\t') &&
		    (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
			return 1;
	return 0;
}

int tsc_usable(void)
{
	if (!TSC_SUPPORTED)
		return 0;
	char src[64];
	if (file_read_small("/sys/devices/system/clocksource/clocksource0/current_clocksource", src,
			    sizeof(src)) <= 0 ||
	    strncmp(src, "tsc", 3) || (src[3] != '\n' && src[3] != '\0'))
		return 0;
	struct strbuf info = STRBUF_INIT;
	int ok = 0;
	if (file_read_strbuf("/proc/cpuinfo", &info, 1 << 20) > 0) {
		/* The first CPU's flags line speaks for all of them. */
		const char *flags = strstr(info.buf, "\nflags");
		const char *eol = flags ? strchr(flags + 1, '\n') : NULL;
		if (eol) {
			info.buf[eol - info.buf] = '\0';
			ok = has_flag(flags, "constant_tsc") && has_flag(flags, "nonstop_tsc");
		}
	}
	strbuf_release(&info);
	return ok;
}

int tsc_pair(uint64_t *tsc, int64_t *ns)
{
	if (!TSC_SUPPORTED)
		return -1;
	uint64_t best_gap = UINT64_MAX, best_tsc = 0;
	int64_t best_ns = 0;
	for (int i = 0; i < TSC_PAIR_TRIES; i++) {
		uint64_t a = tsc_read_ordered();
		int64_t t = clock_mono_ns();
		uint64_t b = tsc_read_ordered();
		if (b >= a && b - a < best_gap) {
			best_gap = b - a;
			best_tsc = a + (b - a) / 2;
			best_ns = t;
		}
	}
	if (best_gap == UINT64_MAX)
		return -1;
	*tsc = best_tsc;
	*ns = best_ns;
	return 0;
}


static void map_push(struct tsc_map *m, uint64_t tsc, int64_t ns)
{
	if (!m->knots)
		m->knots = xmalloc(TSC_MAP_KNOTS * sizeof(*m->knots));
	if (m->n == TSC_MAP_KNOTS) {
		/* Drop the older half: a time that old arrives only from a stalled stream. */
		memmove(m->knots, m->knots + TSC_MAP_KNOTS / 2,
			(TSC_MAP_KNOTS - TSC_MAP_KNOTS / 2) * sizeof(*m->knots));
		m->n = TSC_MAP_KNOTS - TSC_MAP_KNOTS / 2;
		m->hint = 0;
	}
	m->knots[m->n++] = (struct tsc_knot){ tsc, ns, 0 };
	if (m->n >= 2) {
		struct tsc_knot *p = &m->knots[m->n - 2];
		p->slope = (double)(ns - p->ns) / (double)(tsc - p->tsc);
		const struct tsc_knot *a = &m->knots[0], *b = &m->knots[m->n - 1];
		m->rate = (double)(b->ns - a->ns) / (double)(b->tsc - a->tsc);
	}
}

void tsc_map_add(struct tsc_map *m, uint64_t tsc, int64_t ns)
{
	if (!m->n) {
		map_push(m, tsc, ns);
		return;
	}
	const struct tsc_knot *last = &m->knots[m->n - 1];
	if (tsc <= last->tsc || (m->n > 1 && ns - last->ns < TSC_MAP_SPACING_NS))
		return;
	if (m->front_tsc > last->tsc) {
		/* Times past the last knot were handed out on its line: the map
		 * keeps going through the furthest of them. */
		if (tsc <= m->front_tsc)
			return;
		map_push(m, m->front_tsc, m->front_ns);
		last = &m->knots[m->n - 1];
		m->front_tsc = 0;
	}
	map_push(m, tsc, ns > last->ns ? ns : last->ns + 1);
}

int64_t tsc_map_ns(struct tsc_map *m, uint64_t tsc)
{
	if (!m->n)
		return (int64_t)tsc;
	const struct tsc_knot *k = m->knots;
	size_t n = m->n;
	if (tsc >= k[n - 1].tsc) {
		int64_t ns = k[n - 1].ns + (int64_t)((double)(tsc - k[n - 1].tsc) * m->rate);
		if (tsc > m->front_tsc) {
			m->front_tsc = tsc;
			m->front_ns = ns;
		}
		return ns;
	}
	if (tsc <= k[0].tsc)
		return k[0].ns - (int64_t)((double)(k[0].tsc - tsc) * m->rate);
	/* The segment of the last time first: times come mostly in order. */
	size_t lo = 0, hi = n - 1; /* k[lo].tsc <= tsc < k[hi].tsc */
	if (m->hint + 1 < n && tsc >= k[m->hint].tsc && tsc < k[m->hint + 1].tsc)
		lo = m->hint, hi = m->hint + 1;
	else if (n > 2 && tsc >= k[n - 2].tsc)
		lo = n - 2;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (k[mid].tsc <= tsc)
			lo = mid;
		else
			hi = mid;
	}
	m->hint = lo;
	return k[lo].ns + (int64_t)((double)(tsc - k[lo].tsc) * k[lo].slope);
}

void tsc_map_release(struct tsc_map *m)
{
	free(m->knots);
	*m = (struct tsc_map)TSC_MAP_INIT;
}
