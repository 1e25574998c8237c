/* nodesite: the frame a stack node of the recording is charged to, for the
 * analyses whose rows carry a node of their own rather than samples (the
 * allocation sites, the system calls' call sites).
 *
 * The site is the innermost Python frame of the program's own code when the
 * stack has one, else its innermost Python frame (json.loads's allocations are
 * the caller's line, not the decoder's); else the innermost frame outside the
 * system's libraries (frames.h); else the leaf. */
#ifndef SONDE_NODESITE_H
#define SONDE_NODESITE_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

struct strbuf;

struct node_site {
	char *function, *file, *module; /* malloc'd; NULL when unknown */
	int line;
};

/* Loads node's site into *site, the leaf function (*leaf, malloc'd; NULL when
 * none), the functions from the outermost in (*stack, a new JSON array) and
 * whether the stack has a Python frame (*python). 0, or -1 when the
 * recording's stack tables cannot be read. */
int node_site_load(sqlite3 *db, int64_t node, struct node_site *site, char **leaf, json_t **stack,
		   int *python);
void node_site_release(struct node_site *site);

/* "alloc_known.c:leak_some:31", or the function (and module) alone. */
void node_site_location(struct strbuf *sb, const struct node_site *f);

#endif
