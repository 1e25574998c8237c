/* compare_heap: heap sites of two reports matched by function (see
 * compare_heap.h). */
#include "compare_heap.h"
#include "../util/path.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const site_keys[] = {"peak_bytes", "allocated_bytes", "leaked_bytes"};
#define NKEYS (sizeof(site_keys) / sizeof(site_keys[0]))

static const char *str_of(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* The entry of out for (function, file), added when new. */
static json_t *entry_of(json_t *out, const char *function, const char *file)
{
	json_t *e;
	size_t i;
	json_array_foreach(out, i, e)
	{
		if (!strcmp(str_of(e, "function"), function) && !strcmp(str_of(e, "file"), file))
			return e;
	}
	e = json_pack("{s:s, s:s, s:n, s:n}", "function", function, "file", file, "a", "b");
	json_array_append_new(out, e);
	return e;
}

/* Adds report's top sites to out's side key ("a" or "b"). */
static void sites_add(json_t *out, json_t *report, const char *side)
{
	json_t *site;
	size_t i;
	json_array_foreach(
	    json_object_get(json_object_get(json_object_get(report, "memory"), "heap"),
			    "top_sites"),
	    i, site)
	{
		const char *function = str_of(site, "function");
		json_t *e = entry_of(out, *function ? function : str_of(site, "location"),
				     path_base(str_of(site, "file")));
		json_t *v = json_object_get(e, side);
		if (json_is_null(v)) {
			v = json_object();
			for (size_t k = 0; k < NKEYS; k++)
				json_object_set_new(v, site_keys[k], json_real(0));
			json_object_set_new(e, side, v);
		}
		for (size_t k = 0; k < NKEYS; k++) {
			double add = json_number_value(json_object_get(site, site_keys[k]));
			json_t *sum = json_object_get(v, site_keys[k]);
			json_real_set(sum, json_real_value(sum) + add);
		}
	}
}

/* |b - a| of key, or the known side's value when the other is unknown. */
static double change_of(json_t *e, const char *key)
{
	json_t *a = json_object_get(e, "a"), *b = json_object_get(e, "b");
	double va = json_number_value(json_object_get(a, key)),
	       vb = json_number_value(json_object_get(b, key));
	return fabs(vb - va);
}

static int site_cmp(const void *pa, const void *pb)
{
	json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
	for (size_t k = 0; k < 2; k++) {
		double ca = change_of(a, site_keys[k]), cb = change_of(b, site_keys[k]);
		if (ca != cb)
			return ca > cb ? -1 : 1;
	}
	return strcmp(str_of(a, "function"), str_of(b, "function"));
}

json_t *compare_heap_sites(json_t *report_a, json_t *report_b)
{
	json_t *out = json_array();
	json_t *ha = json_object_get(json_object_get(report_a, "memory"), "heap"),
	       *hb = json_object_get(json_object_get(report_b, "memory"), "heap");
	if (!json_is_object(ha) || !json_is_object(hb))
		return out;
	sites_add(out, report_a, "a");
	sites_add(out, report_b, "b");
	size_t n = json_array_size(out);
	if (n < 2)
		return out;
	json_t **v = malloc(n * sizeof(*v));
	if (!v)
		return out;
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(out, i));
	qsort(v, n, sizeof(*v), site_cmp);
	json_array_clear(out);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(out, v[i]);
	free(v);
	return out;
}
