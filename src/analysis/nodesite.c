/* nodesite: a stack node's site, the frame findings name. */
#include "nodesite.h"
#include "analysis.h"
#include "frames.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

static char *col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	return s ? xstrdup((const char *)s) : NULL;
}

void node_site_release(struct node_site *f)
{
	free(f->function);
	free(f->file);
	free(f->module);
}

int node_site_load(sqlite3 *db, int64_t node, struct node_site *site, char **leaf, json_t **stack,
		   int *python)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT n.parent, f.function, f.file, f.line, f.module, f.kind"
			       " FROM stack_nodes n"
			       " JOIN frames f ON f.id = n.frame WHERE n.id = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	struct node_site v[256];
	size_t n = 0, py = SIZE_MAX, own_py = SIZE_MAX;
	for (int64_t id = node; id > 0 && n < 256;) {
		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) != SQLITE_ROW)
			break;
		id = sqlite3_column_int64(st, 0);
		const unsigned char *kind = sqlite3_column_text(st, 5);
		if (py == SIZE_MAX && kind && !strcmp((const char *)kind, "python"))
			py = n;
		v[n] = (struct node_site){col_text(st, 1), col_text(st, 2), col_text(st, 4),
					  sqlite3_column_int(st, 3)};
		if (own_py == SIZE_MAX && kind && !strcmp((const char *)kind, "python") &&
		    !frame_is_python_stdlib(v[n].file))
			own_py = n;
		n++;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	size_t pick = 0;
	while (pick < n && frame_is_system(v[pick].module, NULL))
		pick++;
	if (pick == n)
		pick = 0;
	*python = py < n;
	if (py < n)
		pick = own_py < n ? own_py : py;
	*leaf = n && v[0].function ? xstrdup(v[0].function) : NULL;
	json_t *outer_first = json_array();
	for (size_t i = n; i-- > 0;) {
		const char *fn = v[i].function ? v[i].function : "?";
		json_array_append_new(outer_first, report_string(fn, strlen(fn)));
	}
	memset(site, 0, sizeof(*site));
	for (size_t i = 0; i < n; i++) {
		if (i == pick)
			*site = v[i];
		else
			node_site_release(&v[i]);
	}
	*stack = outer_first;
	return 0;
}

void node_site_location(struct strbuf *sb, const struct node_site *f)
{
	const char *fn = f->function ? f->function : "?";
	if (f->file) {
		const char *base = strrchr(f->file, '/');
		strbuf_addf(sb, "%s:%s", base ? base + 1 : f->file, fn);
		if (f->line > 0)
			strbuf_addf(sb, ":%d", f->line);
	} else if (f->module) {
		const char *base = strrchr(f->module, '/');
		strbuf_addf(sb, "%s (%s)", fn, base ? base + 1 : f->module);
	} else {
		strbuf_addstr(sb, fn);
	}
}
