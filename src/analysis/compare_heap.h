/* compare_heap: the heap side of `sonde compare`, from the two report
 * models' `memory.heap` (runs made with --memory).
 *
 * Contract:
 * - Sites are matched by function and file base name, without the line: an
 *   edit between the runs moves lines, and a function's allocations stay
 *   comparable. Sites of one function in a report are summed.
 * - A report lists only its top sites (memory_heap.c), so a function absent
 *   from one side's list is unknown there (JSON null), never zero.
 * - compare_heap_sites() returns a new array, never NULL (empty when either
 *   report lacks memory.heap): [{function, file, a, b}], a and b objects of
 *   {peak_bytes, allocated_bytes, leaked_bytes} or null; the largest
 *   |Δ peak_bytes| first (a site known on one side only ranks by its known
 *   peak), then |Δ allocated_bytes|. */
#ifndef SONDE_COMPARE_HEAP_H
#define SONDE_COMPARE_HEAP_H

#include <jansson.h>

json_t *compare_heap_sites(json_t *report_a, json_t *report_b);

#endif
