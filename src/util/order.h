/* order: components put in a run order from what each needs and provides.
 *
 * A component that needs something another provides comes after it (when
 * both are in the table: a need nobody provides is no constraint); otherwise
 * the table's order stands. The order is stable: each step places the first
 * component, in table order, that waits on no component still unplaced.
 * Used for the probes (probe_order) and the derive passes (derive_order),
 * so neither depends on where a line stands in its table. */
#ifndef SONDE_ORDER_H
#define SONDE_ORDER_H

#include <stddef.h>

struct strbuf;

struct order_item {
	const char *name;
	const char *const *needs;    /* NULL-terminated; NULL: none */
	const char *const *provides; /* the same */
};

/* 1 when a need is met by something provided; NULL: equal strings. */
typedef int (*order_meets_fn)(const char *need, const char *provided);

/* Puts the indexes of items[0..n) into out (n of them) in run order and
 * returns n; or -1 with "WHAT wait on each other: NAME ..." in why when
 * some wait on each other (out is then unspecified). */
long order_by_needs(const struct order_item *items, size_t n, order_meets_fn meets, size_t *out,
		    const char *what, struct strbuf *why);

#endif
