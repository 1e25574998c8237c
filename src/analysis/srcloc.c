/* srcloc: a log line back to the source line that wrote it. */
#include "srcloc.h"
#include "../util/fileio.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SRCLOC_DIRS_MAX 16
#define SRCLOC_PIECES_MAX 16
#define SRCLOC_FANOUT_MAX 8

struct src_file {
	char *path;
	char *text;
	size_t len;
	int named; /* the recording's frames name it (not only its folder) */
};

struct srcloc_index {
	struct src_file *v;
	size_t n;
};

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static int source_name(const char *name)
{
	return ends_with(name, ".py") || ends_with(name, ".c") || ends_with(name, ".cc") ||
	       ends_with(name, ".cpp");
}

/* A file of the program's own: not the interpreter's library, not a system
 * header or library. */
static int own_file(const char *path)
{
	return path[0] == '/' && !strstr(path, "/lib/python") && !strstr(path, "-packages/") &&
	       strncmp(path, "/usr/", 5) && source_name(path);
}

static void file_add(struct srcloc_index *ix, const char *path)
{
	struct stat st;
	if (ix->n >= SRCLOC_FILES_MAX || stat(path, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size <= 0 || st.st_size > SRCLOC_FILE_MAX)
		return;
	for (size_t i = 0; i < ix->n; i++)
		if (!strcmp(ix->v[i].path, path))
			return;
	struct strbuf sb = STRBUF_INIT;
	if (file_read_strbuf(path, &sb, SRCLOC_FILE_MAX) <= 0 || !sb.len) {
		strbuf_release(&sb);
		return;
	}
	ix->v = xrealloc(ix->v, (ix->n + 1) * sizeof(*ix->v));
	ix->v[ix->n].path = xstrdup(path);
	ix->v[ix->n].len = sb.len;
	ix->v[ix->n].text = strbuf_detach(&sb);
	ix->n++;
}

static void dir_add(struct srcloc_index *ix, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct strbuf path = STRBUF_INIT;
	while (d && (e = readdir(d)) && ix->n < SRCLOC_FILES_MAX) {
		if (e->d_name[0] == '.' || !source_name(e->d_name))
			continue;
		strbuf_reset(&path);
		strbuf_addf(&path, "%s/%s", dir, e->d_name);
		file_add(ix, path.buf);
	}
	if (d)
		closedir(d);
	strbuf_release(&path);
}

struct srcloc_index *srcloc_index_new(sqlite3 *db)
{
	sqlite3_stmt *st;
	struct srcloc_index *ix = xcalloc(1, sizeof(*ix));
	char *dirs[SRCLOC_DIRS_MAX];
	size_t ndirs = 0;
	struct hashmap named = HASHMAP_INIT;
	if (sqlite3_prepare_v2(db, "SELECT DISTINCT file FROM frames WHERE file IS NOT NULL", -1,
			       &st, NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW && ndirs < SRCLOC_DIRS_MAX) {
			const char *file = (const char *)sqlite3_column_text(st, 0);
			if (!file || !own_file(file))
				continue;
			hashmap_put(&named, file, strlen(file), 1);
			const char *slash = strrchr(file, '/');
			char *dir = strndup(file, (size_t)(slash - file));
			size_t i;
			for (i = 0; i < ndirs && strcmp(dirs[i], dir); i++)
				;
			if (i < ndirs || !dir)
				free(dir);
			else
				dirs[ndirs++] = dir;
		}
		sqlite3_finalize(st);
	}
	for (size_t i = 0; i < ndirs; i++) {
		dir_add(ix, dirs[i]);
		free(dirs[i]);
	}
	for (size_t i = 0; i < ix->n; i++)
		ix->v[i].named = hashmap_get(&named, ix->v[i].path, strlen(ix->v[i].path)) != NULL;
	hashmap_release(&named);
	if (!ix->n) {
		free(ix);
		return NULL;
	}
	return ix;
}

struct srcloc_index *srcloc_index_of_text(const char *path, const char *text, size_t len)
{
	if (!len || len > SRCLOC_FILE_MAX)
		return NULL;
	struct srcloc_index *ix = xcalloc(1, sizeof(*ix));
	ix->v = xcalloc(1, sizeof(*ix->v));
	ix->v[0].path = xstrdup(path);
	ix->v[0].text = xmalloc(len);
	memcpy(ix->v[0].text, text, len);
	ix->v[0].len = len;
	ix->n = 1;
	return ix;
}

void srcloc_index_free(struct srcloc_index *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->n; i++) {
		free(ix->v[i].path);
		free(ix->v[i].text);
	}
	free(ix->v);
	free(ix);
}

struct piece {
	const char *s;
	size_t n;
};

/* The literal pieces of the string literal at s (its opening quote), split
 * at format fields; *end gets the byte after its closing quote. Returns the
 * count, 0 when the literal does not close on this line. */
static size_t literal_pieces(const char *s, const char *eol, struct piece *out, const char **end)
{
	char q = *s;
	size_t n = 0;
	const char *p = s + 1, *start = p;
	while (p < eol && *p != q) {
		size_t field = 0;
		if (*p == '\\' && p + 1 < eol) {
			field = 2; /* an escape: cut there (its bytes differ in the output) */
		} else if (*p == '%' && p + 1 < eol) {
			const char *f = p + 1;
			while (f < eol && strchr("-+ #0123456789.", *f))
				f++;
			if (f < eol && strchr("sdifgeExXrcuoa%", *f))
				field = (size_t)(f + 1 - p);
		} else if (*p == '{') {
			const char *f = memchr(p, '}', (size_t)(eol - p));
			if (f)
				field = (size_t)(f + 1 - p);
		}
		if (!field) {
			p++;
			continue;
		}
		if (p > start && n < SRCLOC_PIECES_MAX)
			out[n++] = (struct piece){ start, (size_t)(p - start) };
		p += field;
		start = p;
	}
	if (p >= eol)
		return 0;
	if (p > start && n < SRCLOC_PIECES_MAX)
		out[n++] = (struct piece){ start, (size_t)(p - start) };
	*end = p + 1;
	return n;
}

/* The literal characters of pieces found in line in order, 0 when one is missing. */
static size_t pieces_match(const struct piece *pc, size_t n, const char *line, size_t len)
{
	size_t at = 0, total = 0;
	for (size_t i = 0; i < n; i++) {
		const char *hit = at <= len ? memmem(line + at, len - at, pc[i].s, pc[i].n) : NULL;
		if (!hit)
			return 0;
		at = (size_t)(hit - line) + pc[i].n;
		total += pc[i].n;
	}
	return total;
}

/* The best-matching source line of one file: score and line start. */
static size_t file_best(const struct src_file *f, const char *line, size_t len,
			const char **best_at)
{
	size_t best = 0;
	for (const char *l = f->text, *end = f->text + f->len; l < end;) {
		const char *eol = memchr(l, '\n', (size_t)(end - l));
		eol = eol ? eol : end;
		for (const char *p = l; p < eol; p++) {
			if (*p != '"' && *p != '\'')
				continue;
			struct piece pc[SRCLOC_PIECES_MAX];
			const char *after = eol;
			size_t n = literal_pieces(p, eol, pc, &after);
			size_t score = n ? pieces_match(pc, n, line, len) : 0;
			if (score >= SRCLOC_LITERAL_MIN && score > best) {
				best = score;
				*best_at = l;
			}
			p = n ? after - 1 : p;
		}
		l = eol + 1;
	}
	return best;
}

static size_t indent_of(const char *l, const char *end)
{
	size_t n = 0;
	while (l + n < end && (l[n] == ' ' || l[n] == '\t'))
		n++;
	return n;
}

/* The name after a keyword at p ("def ", "class "), into out. */
static void name_after(const char *p, const char *end, struct strbuf *out)
{
	while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
		strbuf_addch(out, *p++);
}

static const char *line_start(const char *text, const char *p)
{
	while (p > text && p[-1] != '\n')
		p--;
	return p;
}

static const char *const fanouts[] = { "asyncio.gather", "create_task", "as_completed",
				       "TaskGroup",	 "asyncio.wait", ".submit(",
				       ".map(",		 "gather(", NULL };
static const char *const bounds[] = { "Semaphore(", "max_workers=", "limit=", "max_concurrency",
				      NULL };

/* The body of the Python function whose def line starts at def: [def, end). */
static const char *py_body_end(const struct src_file *f, const char *def)
{
	const char *end = f->text + f->len;
	size_t ind = indent_of(def, end);
	const char *l = memchr(def, '\n', (size_t)(end - def));
	for (l = l ? l + 1 : end; l < end;) {
		const char *eol = memchr(l, '\n', (size_t)(end - l));
		eol = eol ? eol : end;
		size_t i = indent_of(l, eol);
		if (l + i < eol && l[i] != '#' && i <= ind)
			return l;
		l = eol + 1;
	}
	return end;
}

static int line_number(const struct src_file *f, const char *at)
{
	int n = 1;
	for (const char *p = f->text; p < at; p++)
		n += *p == '\n';
	return n;
}

static void enclosing(const struct src_file *f, const char *at, json_t *o)
{
	const char *end = f->text + f->len;
	int python = ends_with(f->path, ".py");
	size_t ind = indent_of(at, end);
	struct strbuf fn = STRBUF_INIT, cls = STRBUF_INIT;
	const char *def = NULL, *class_at = NULL;
	for (const char *l = at; l > f->text;) {
		l = line_start(f->text, l - 1);
		const char *eol = memchr(l, '\n', (size_t)(end - l));
		eol = eol ? eol : end;
		size_t i = indent_of(l, eol);
		const char *p = l + i;
		if (python) {
			if (i >= ind || p >= eol || *p == '#')
				continue;
			if (!def && (!strncmp(p, "def ", 4) || !strncmp(p, "async def ", 10))) {
				name_after(p + (*p == 'a' ? 10 : 4), eol, &fn);
				def = l;
				ind = i;
			} else if (def && !strncmp(p, "class ", 6)) {
				name_after(p + 6, eol, &cls);
				class_at = l;
				break;
			}
		} else if (i == 0 && (isalpha((unsigned char)*p) || *p == '_') &&
			   memchr(p, '(', (size_t)(eol - p)) && eol[-1] != ';') {
			const char *paren = memchr(p, '(', (size_t)(eol - p)), *s = paren;
			while (s > p && (isalnum((unsigned char)s[-1]) || s[-1] == '_'))
				s--;
			strbuf_add(&fn, s, (size_t)(paren - s));
			def = l;
			break;
		}
	}
	json_object_set_new(o, "function", fn.len ? json_string(fn.buf) : json_null());
	json_object_set_new(o, "class", cls.len ? json_string(cls.buf) : json_null());
	json_t *fan = json_array();
	int bounded = 0;
	const char *body_end = def && python ? py_body_end(f, def) : NULL;
	if (!body_end && def) { /* C: to the closing brace at column 0 */
		const char *close = def;
		while ((close = memchr(close, '\n', (size_t)(end - close))) && close + 1 < end &&
		       close[1] != '}')
			close++;
		body_end = close ? close + 1 : end;
	}
	for (const char *l = def; l && l < body_end;) {
		const char *eol = memchr(l, '\n', (size_t)(end - l));
		eol = eol ? eol : end;
		for (size_t k = 0; fanouts[k]; k++)
			if (memmem(l, (size_t)(eol - l), fanouts[k], strlen(fanouts[k])) &&
			    json_array_size(fan) < SRCLOC_FANOUT_MAX) {
				json_array_append_new(fan, json_pack("{s:s, s:i}", "construct", fanouts[k],
								     "line", line_number(f, l)));
				break;
			}
		l = eol + 1;
	}
	/* The limit may be set up elsewhere in the class (a Semaphore made in
	 * __init__, taken in the fetching method). */
	const char *scope = class_at ? class_at : def;
	const char *scope_end = class_at ? py_body_end(f, class_at) : body_end;
	for (size_t k = 0; scope && bounds[k]; k++)
		bounded |= memmem(scope, (size_t)(scope_end - scope), bounds[k], strlen(bounds[k])) != NULL;
	json_object_set_new(o, "bounded",
			    json_array_size(fan) ? json_boolean(bounded) : json_null());
	json_object_set_new(o, "fan_out", fan);
	strbuf_release(&fn);
	strbuf_release(&cls);
}

json_t *srcloc_find(const struct srcloc_index *ix, const char *line, size_t len)
{
	size_t best = 0;
	const struct src_file *bf = NULL;
	const char *bat = NULL;
	/* A file the program ran wins over one that only shares its folder
	 * (another program's generic "phase=%s start"). */
	for (size_t i = 0; ix && i < ix->n; i++) {
		const char *at = NULL;
		size_t score = file_best(&ix->v[i], line, len, &at);
		if (score && bf && bf->named != ix->v[i].named) {
			if (bf->named)
				continue;
			best = 0;
		}
		if (score > best) {
			best = score;
			bf = &ix->v[i];
			bat = at;
		}
	}
	if (!bf)
		return NULL;
	json_t *o = json_object();
	struct strbuf path = STRBUF_INIT;
	utf8_sanitize(bf->path, strlen(bf->path), &path); /* a file name is any bytes */
	json_object_set_new(o, "file", json_string(strbuf_str(&path)));
	strbuf_release(&path);
	json_object_set_new(o, "line", json_integer(line_number(bf, bat)));
	enclosing(bf, bat, o);
	return o;
}
