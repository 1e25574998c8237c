/* manifest: sonde instrument's record of the lines it inserted (manifest.h). */
#include "manifest.h"
#include "rundir.h"
#include "../record/recorder.h"
#include "../util/fileio.h"
#include "../util/safefile.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST_VERSION 1
#define MANIFEST_MAX_BYTES (64 << 20)

struct manifest_entry *manifest_find(struct manifest *m, const char *file)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].file, file))
			return &m->v[i];
	return NULL;
}

struct manifest_entry *manifest_add(struct manifest *m, const char *file, const char *path)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 8;
		m->v = xrealloc(m->v, m->cap * sizeof(*m->v));
	}
	struct manifest_entry *e = &m->v[m->n++];
	memset(e, 0, sizeof(*e));
	e->file = xstrdup(file);
	e->path = xstrdup(path);
	return e;
}

int manifest_target_add(struct manifest_entry *e, const char *qualname, const char *region)
{
	for (size_t i = 0; i < e->ntargets; i++)
		if (!strcmp(e->targets[i].qualname, qualname))
			return 0;
	e->targets = xrealloc(e->targets, (e->ntargets + 1) * sizeof(*e->targets));
	e->targets[e->ntargets++] = (struct pyedit_target){ xstrdup(qualname), xstrdup(region) };
	return 1;
}

static void entry_release(struct manifest_entry *e)
{
	free(e->file);
	free(e->path);
	for (size_t i = 0; i < e->ntargets; i++) {
		free((char *)e->targets[i].qualname);
		free((char *)e->targets[i].region);
	}
	free(e->targets);
	pyedit_lines_release(&e->lines);
}

void manifest_drop(struct manifest *m, size_t i)
{
	entry_release(&m->v[i]);
	memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof(*m->v));
	m->n--;
}

void manifest_release(struct manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		entry_release(&m->v[i]);
	free(m->v);
	*m = (struct manifest)MANIFEST_INIT;
}

static const char *str_of(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* One entry from its JSON object; -1 when a field is missing or malformed. */
static int entry_parse(struct manifest *m, json_t *o)
{
	const char *file = str_of(o, "file"), *before = str_of(o, "sha256_before"),
		   *after = str_of(o, "sha256_after");
	json_t *targets = json_object_get(o, "functions"), *lines = json_object_get(o, "lines");
	if (file[0] != '/' || strlen(before) != SHA256_HEX_LEN || strlen(after) != SHA256_HEX_LEN ||
	    !json_is_array(targets) || !json_is_array(lines))
		return -1;
	struct manifest_entry *e = manifest_add(m, file, str_of(o, "path"));
	memcpy(e->sha256_before, before, sizeof(e->sha256_before));
	memcpy(e->sha256_after, after, sizeof(e->sha256_after));
	size_t i;
	json_t *v;
	json_array_foreach(targets, i, v)
	    manifest_target_add(e, str_of(v, "function"), str_of(v, "region"));
	json_array_foreach(lines, i, v)
	{
		json_int_t line = json_integer_value(json_object_get(v, "line"));
		const char *text = str_of(v, "text");
		if (line < 1 || line > 1 << 30 || !strstr(text, PYEDIT_MARK))
			return -1;
		pyedit_lines_add(&e->lines, (int)line, text, strlen(text));
	}
	return 0;
}

int manifest_load(struct manifest *m, struct strbuf *err)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *root = NULL;
	struct stat st;
	int ret = -1;
	int fd = file_open_regular(MANIFEST_PATH, O_NOFOLLOW);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0 || fstat(fd, &st)) {
		strbuf_addf(err, "cannot read %s: %s", MANIFEST_PATH,
			    fd == -ELOOP	  ? "a symbolic link, not sonde's file"
			    : fd == -EFTYPE_SONDE ? "not a regular file"
						  : strerror(fd < 0 ? -fd : errno));
		goto out;
	}
	if (st.st_uid != geteuid()) {
		strbuf_addf(err, "%s belongs to another user: sonde does not act on it",
			    MANIFEST_PATH);
		goto out;
	}
	ssize_t n = file_read_fd_strbuf(fd, &sb, MANIFEST_MAX_BYTES);
	json_error_t jerr;
	root = n >= 0 ? json_loadb(sb.buf, sb.len, 0, &jerr) : NULL;
	json_t *files = json_object_get(root, "files");
	if (!json_is_array(files)) {
		strbuf_addf(err, "%s is not sonde's manifest (%s)", MANIFEST_PATH,
			    n < 0  ? strerror((int)-n)
			    : root ? "no files list"
				   : jerr.text);
		goto out;
	}
	size_t i;
	json_t *o;
	json_array_foreach(files, i, o) if (entry_parse(m, o))
	{
		strbuf_addf(err, "%s: entry %zu is damaged", MANIFEST_PATH, i + 1);
		manifest_release(m);
		goto out;
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	json_decref(root);
	strbuf_release(&sb);
	return ret;
}

void manifest_lines_text(const struct manifest_entry *e, struct strbuf *out)
{
	for (size_t i = 0; i < e->lines.n;) {
		size_t j = i;
		while (j + 1 < e->lines.n && e->lines.v[j + 1].line == e->lines.v[j].line + 1)
			j++;
		strbuf_addf(out, "%s%d", i ? ", " : "", e->lines.v[i].line);
		if (j > i)
			strbuf_addf(out, "-%d", e->lines.v[j].line);
		i = j + 1;
	}
}

/* What the changelog says a file got. */
static void entry_what(const struct manifest_entry *e, struct strbuf *out)
{
	strbuf_addstr(out, "timing regions (sonde instrument) for ");
	for (size_t i = 0; i < e->ntargets; i++)
		strbuf_addf(out, "%s%s", i ? ", " : "", e->targets[i].qualname);
	strbuf_addstr(out, "; lines marked " PYEDIT_MARK ", `sonde clean` removes them");
}

static json_t *entry_json(const struct manifest_entry *e)
{
	struct strbuf what = STRBUF_INIT, lines = STRBUF_INIT;
	json_t *targets = json_array(), *inserted = json_array();
	for (size_t i = 0; i < e->ntargets; i++)
		json_array_append_new(targets,
				      json_pack("{s:s, s:s}", "function", e->targets[i].qualname,
						"region", e->targets[i].region));
	for (size_t i = 0; i < e->lines.n; i++)
		json_array_append_new(inserted, json_pack("{s:i, s:s}", "line", e->lines.v[i].line,
							  "text", e->lines.v[i].text));
	entry_what(e, &what);
	manifest_lines_text(e, &lines);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "file", e->file,
			      "path", e->path, "change", "modified", "what", what.buf,
			      "sha256_before", e->sha256_before, "sha256_after", e->sha256_after,
			      "line_ranges", lines.buf, "functions", targets, "lines", inserted);
	strbuf_release(&what);
	strbuf_release(&lines);
	return o;
}

int manifest_save(const struct manifest *m, struct strbuf *err)
{
	struct strbuf tmp = STRBUF_INIT;
	char *text = NULL;
	int fd = -1, r = 0, ret = -1;
	int dirfd = rundir_open_base(SAFEFILE_DIR_MODE(SAFEFILE_MODE_PRIVATE), err);
	if (dirfd < 0)
		return -1;
	if (!m->n) {
		if (unlinkat(dirfd, MANIFEST_NAME, 0) && errno != ENOENT) {
			strbuf_addf(err, "cannot remove %s: %s", MANIFEST_PATH, strerror(errno));
			goto out;
		}
		ret = 0;
		goto out;
	}
	json_t *files = json_array();
	for (size_t i = 0; i < m->n; i++)
		json_array_append_new(files, entry_json(&m->v[i]));
	json_t *root = json_pack("{s:s, s:i, s:o}", "written_by",
				 "sonde instrument; `sonde clean` reads it (docs/regions.md)",
				 "version", MANIFEST_VERSION, "files", files);
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	fd = text ? safe_tmp_create(dirfd, MANIFEST_NAME, SAFEFILE_MODE_PRIVATE, &tmp) : -ENOMEM;
	if (fd < 0) {
		strbuf_addf(err, "cannot write %s: %s", MANIFEST_PATH, strerror(-fd));
		goto out;
	}
	size_t len = strlen(text), done = 0;
	errno = 0;
	while (done < len && (r = (int)write(fd, text + done, len - done)) > 0)
		done += (size_t)r;
	if (done < len || write(fd, "\n", 1) != 1 || fsync(fd)) {
		strbuf_addf(err, "cannot write %s: %s", MANIFEST_PATH,
			    strerror(errno ? errno : EIO));
		unlinkat(dirfd, tmp.buf, 0);
		goto out;
	}
	if ((r = safe_tmp_commit(dirfd, tmp.buf, MANIFEST_NAME))) {
		strbuf_addf(err, "cannot write %s: %s", MANIFEST_PATH, strerror(-r));
		goto out;
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	close(dirfd);
	free(text);
	strbuf_release(&tmp);
	return ret;
}

void manifest_changelog(struct recorder *rec)
{
	struct manifest m = MANIFEST_INIT;
	struct strbuf err = STRBUF_INIT, what = STRBUF_INIT, lines = STRBUF_INIT;
	if (manifest_load(&m, &err) == 0)
		for (size_t i = 0; i < m.n; i++) {
			strbuf_reset(&what);
			strbuf_reset(&lines);
			entry_what(&m.v[i], &what);
			manifest_lines_text(&m.v[i], &lines);
			record_changelog(rec, m.v[i].path, "modified", what.buf, lines.buf);
		}
	manifest_release(&m);
	strbuf_release(&err);
	strbuf_release(&what);
	strbuf_release(&lines);
}
