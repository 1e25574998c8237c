/* memory_heap: the allocation tracker's report section. Its naming of a call
 * site is shared, so that other analyses (memory_rss's RSS jumps) name the
 * same sites the same way. */
#ifndef SONDE_MEMORY_HEAP_H
#define SONDE_MEMORY_HEAP_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

/* The allocation site whose stack is node (alloc_sites.node): a new object
 * {function, file, line, module, location, python_site (only with a Python
 * stack), allocated_in, stack (outermost first)}, or NULL when the node
 * cannot be read. The caller owns it. */
json_t *heap_site_describe(sqlite3 *db, int64_t node);

/* Sorts arr's objects by their integer key, largest first, in place (a few
 * entries: the sites of a Python line, a jump's allocating sites). */
void heap_sites_sort(json_t *arr, const char *key);

#endif
